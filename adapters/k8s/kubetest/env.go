package kubetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// OperatorUser is a user without groups. On a server that kubetest started it
// authenticates with its own token; it may do nothing until a test binds a
// role to it.
const OperatorUser = "opbus-operator"

// Env is a Kubernetes API server that tests use: one that kubetest started,
// or an existing cluster. Its methods are safe for concurrent use.
type Env struct {
	admin  *rest.Config
	tokens map[string]string // user name → bearer token; local servers only
	local  *localServer      // nil for an existing cluster

	coreOnce sync.Once
	core     corev1client.CoreV1Interface
	coreErr  error
}

// Start returns an API server for the test, chosen as the package
// documentation describes. It skips the test when there is none, or fails it
// when the environment variable CI is "true". A server that Start launches is
// the test's own and stops when the test ends; tests that can share one
// should use [Shared].
func Start(t TB) *Env {
	t.Helper()
	return StartWith(t, nil)
}

// StartOptions configures a server that [StartWith] launches.
type StartOptions struct {
	// FeatureGates sets kube-apiserver's feature gates, such as
	// {"ShardedListAndWatch": true}: passed as --feature-gates, in name
	// order. A gate the server does not know fails the start.
	FeatureGates map[string]bool
}

// StartWith is [Start] with options for a server it launches. An existing
// cluster (a kubeconfig) is used as it is: o cannot change it, so a test
// that needs a feature gate must check that the server has it.
func StartWith(t TB, o *StartOptions) *Env {
	t.Helper()
	src, err := lookupSource(os.Getenv)
	if errors.Is(err, errNoServer) {
		skipOrFail(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if src.kubeconfig != "" {
		e, err := connect(t.Context(), src.kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("kubetest: using the cluster at %s from %s=%s", e.admin.Host, KubeconfigVar, src.kubeconfig)
		return e
	}
	e, err := launch(t.Context(), src.bin, t.TempDir(), o.args())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.local.stop(); err != nil {
			t.Error(err)
		}
	})
	t.Logf("kubetest: kube-apiserver ready at %s in %v (programs from %s=%s)",
		e.admin.Host, time.Since(begin).Round(time.Millisecond), src.binVar, src.bin)
	return e
}

// connect returns an Env for the existing cluster of the kubeconfig at path,
// after checking that the cluster answers.
func connect(ctx context.Context, path string) (*Env, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %s=%s: %w", KubeconfigVar, path, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("kubetest: %s=%s: %w", KubeconfigVar, path, err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := dc.RESTClient().Get().AbsPath("/version").Do(ctx).Error(); err != nil {
		return nil, fmt.Errorf("kubetest: %s=%s: cluster at %s: %w", KubeconfigVar, path, cfg.Host, err)
	}
	return &Env{admin: cfg}, nil
}

// AdminConfig returns a new client configuration with every permission: a
// member of system:masters on a server that kubetest started, the
// kubeconfig's user on an existing cluster. The caller may modify it.
func (e *Env) AdminConfig() *rest.Config {
	return rest.CopyConfig(e.admin)
}

// UserConfig returns a new client configuration that acts as the named user,
// for example [OperatorUser]. The user has no groups besides
// system:authenticated, so it may do only what roles bound to it allow. On a
// server that kubetest started, [OperatorUser] authenticates with its own
// token; any other user, and every user on an existing cluster, is
// impersonated with the admin's credentials. The caller may modify the
// configuration.
func (e *Env) UserConfig(user string) *rest.Config {
	if token, ok := e.tokens[user]; ok {
		cfg := rest.AnonymousClientConfig(e.admin)
		cfg.BearerToken = token
		return cfg
	}
	cfg := rest.CopyConfig(e.admin)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	return cfg
}

// RestartAPIServer stops kube-apiserver and starts it again on the same port
// with the same etcd, so that clients see a server that went away and came
// back with all its data. It returns when the server is ready again. Other
// tests using the same Env see the outage too, so a test that restarts
// usually calls [Start] for its own server. RestartAPIServer skips the test
// on an existing cluster, which kubetest cannot restart.
func (e *Env) RestartAPIServer(t TB) {
	t.Helper()
	if e.local == nil {
		t.Skipf("kubetest: cannot restart the API server of an existing cluster (%s is set); "+
			"set only %s or %s to run this test", KubeconfigVar, BinVar, AssetsVar)
	}
	begin := time.Now()
	stopped, err := e.local.restartAPIServer(t.Context(), e.admin.BearerToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubetest: kube-apiserver restarted in %v (stopped in %v)",
		time.Since(begin).Round(time.Millisecond), stopped.Round(time.Millisecond))
}

// coreClient returns the admin's client for the core API group.
func (e *Env) coreClient() (corev1client.CoreV1Interface, error) {
	e.coreOnce.Do(func() {
		e.core, e.coreErr = corev1client.NewForConfig(e.AdminConfig())
	})
	return e.core, e.coreErr
}

// args returns the kube-apiserver flags of o; nil o gives none.
func (o *StartOptions) args() []string {
	if o == nil || len(o.FeatureGates) == 0 {
		return nil
	}
	gates := make([]string, 0, len(o.FeatureGates))
	for _, name := range slices.Sorted(maps.Keys(o.FeatureGates)) {
		gates = append(gates, name+"="+strconv.FormatBool(o.FeatureGates[name]))
	}
	return []string{"--feature-gates=" + strings.Join(gates, ",")}
}
