package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestMain runs the command when the test binary is started as it (see
// plugin), and otherwise the tests, against a real API server.
func TestMain(m *testing.M) {
	if os.Getenv("OPBUS_TEST_RUN_COMMAND") == "1" {
		main()
	}
	kubetest.Main(m)
}

// plugin returns a path named kubectl-opbus that runs this command: the
// name kubectl finds its plugins by.
func plugin(t *testing.T) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "kubectl-opbus")
	if err := os.Symlink(self, path); err != nil {
		t.Fatal(err)
	}
	return path
}

func runPlugin(t *testing.T, path string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(path, args...)
	cmd.Env = append(os.Environ(), "OPBUS_TEST_RUN_COMMAND=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// TestExplainKubernetes runs an operator on ConfigMaps against a real API
// server, then kubectl-opbus, as a process named as kubectl's plugin,
// through a kubeconfig: it explains the record on the ConfigMap, by
// resource, singular and kind, as text and JSON; bad input is an error
// naming it.
func TestExplainKubernetes(t *testing.T) {
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(),
		Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, Namespaces: []string{ns}}}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(&opbus.Options{ShutdownTimeout: 10 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	on := opbus.On{Kinds: []string{"ConfigMap"}, Fields: []string{"data"}}
	if err := bus.Handle("render", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Active("rendered"), nil
	}, on); err != nil {
		t.Fatal(err)
	}
	if err := bus.Handle("publish", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, opbus.Permanent(errors.New("data.target: no such bucket"))
	}, on); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- src.Run(ctx, bus) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	cs, err := kubernetes.NewForConfig(env.AdminConfig())
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "site"}, Data: map[string]string{"target": "b1"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.WriteKubeconfig(t, nil)
	bin := plugin(t)
	deadline := time.Now().Add(20 * time.Second)
	var out, errOut string
	var code int
	for {
		out, errOut, code = runPlugin(t, bin, "explain", "--kubeconfig", kubeconfig, "-n", ns, "configmaps", "site")
		if code == 0 && strings.Contains(out, "publish: failed-permanently") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no permanent failure explained within 20s: exit %d\n%s%s", code, out, errOut)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for _, want := range []string{
		"ConfigMap " + ns + "/site (from the record, at ",
		"publish: failed-permanently\n",
		"  error: data.target: no such bucket\n",
		"render: ran\n",
		"  slot: active \"rendered\"\n",
		"note: made from the stored record alone",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// The README's order: flags after the resource and name, as kubectl
	// takes them.
	if out2, errOut2, code2 := runPlugin(t, bin, "explain", "configmaps", "site", "-n", ns, "--kubeconfig="+kubeconfig); code2 != 0 || !strings.Contains(out2, "publish: failed-permanently") {
		t.Errorf("flags after RESOURCE NAME: exit %d\n%s%s", code2, out2, errOut2)
	}
	for _, resource := range []string{"configmap", "ConfigMap", "cm"} {
		out, errOut, code := runPlugin(t, bin, "explain", "--kubeconfig", kubeconfig, "--namespace", ns, "--json", resource, "site")
		var r opbus.Explanation
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Key.Kind != "ConfigMap" || len(r.Handlers) != 2 {
			t.Errorf("%s: exit %d, report %+v\n%s", resource, code, r, errOut)
		}
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"explain", "configmaps"}, 2, "kubectl opbus: bad usage: got 1 arguments"},
		{[]string{"explain", "--kubeconfig", kubeconfig, "-n", ns, "gadgets", "site"}, 1, `resource "gadgets": the server has no such resource or kind`},
		{[]string{"explain", "--kubeconfig", kubeconfig, "-n", ns, "configmaps", "none"}, 1, `configmaps "none" not found`},
		{[]string{"explain", "--kubeconfig", kubeconfig, "-n", ns, "--operator", "other", "configmaps", "site"}, 1, "no record in annotation other.opbus.dev/record"},
	} {
		_, errOut, code := runPlugin(t, bin, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
}
