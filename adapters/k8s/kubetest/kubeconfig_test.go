package kubetest_test

import (
	"context"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authnv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestWriteKubeconfig checks that a kubeconfig written for the admin and
// one for an impersonated user reach the server as those users, through
// the same loading rules as kubectl's.
func TestWriteKubeconfig(t *testing.T) {
	env := kubetest.Shared(t)
	for _, tc := range []struct {
		name, path, want string
	}{
		{"admin", env.WriteKubeconfig(t, nil), ""},
		{"user", env.WriteKubeconfig(t, env.UserConfig("kubeconfig-test-user")), "kubeconfig-test-user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := clientcmd.BuildConfigFromFlags("", tc.path)
			if err != nil {
				t.Fatalf("loading %s: %v", tc.path, err)
			}
			c, err := authnv1client.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			review, err := c.SelfSubjectReviews().Create(context.Background(), &authnv1.SelfSubjectReview{}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("asking who the kubeconfig authenticates as: %v", err)
			}
			got := review.Status.UserInfo.Username
			if tc.want != "" && got != tc.want {
				t.Errorf("authenticated as %q, want %q", got, tc.want)
			}
			if got == "" || got == "system:anonymous" {
				t.Errorf("authenticated as %q, want a real user", got)
			}
		})
	}
}
