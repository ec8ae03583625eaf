package kubeenv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Environment variables that choose the API server; see the package
// documentation.
const (
	// KubeconfigVar names the variable holding the path of a kubeconfig for
	// an existing cluster.
	KubeconfigVar = "OPBUS_TEST_KUBECONFIG"
	// BinVar names the variable holding a directory with the programs
	// kube-apiserver and etcd.
	BinVar = "OPBUS_KUBE_BIN"
)

// errNoServer means that neither [KubeconfigVar] nor [BinVar] is set.
var errNoServer = errors.New("kubeenv: no Kubernetes API server for this test: " +
	"set " + BinVar + " to a directory with kube-apiserver and etcd " +
	"(build them from the repository root with: export " + BinVar + "=$(scripts/kube-bin), about 10-12 min the first time), " +
	"or set " + KubeconfigVar + " to the kubeconfig of an existing cluster")

// source is where the API server comes from: exactly one field is set.
type source struct {
	kubeconfig string // path of a kubeconfig for an existing cluster
	bin        string // directory with kube-apiserver and etcd
}

// lookupSource reads the environment through getenv. It returns errNoServer
// when nothing is configured, and another error when a setting is unusable.
func lookupSource(getenv func(string) string) (source, error) {
	if path := getenv(KubeconfigVar); path != "" {
		return source{kubeconfig: path}, nil
	}
	dir := getenv(BinVar)
	if dir == "" {
		return source{}, errNoServer
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return source{}, fmt.Errorf("kubeenv: %s=%q: %w", BinVar, dir, err)
	}
	for _, name := range []string{etcdProgram, apiServerProgram} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			return source{}, fmt.Errorf("kubeenv: %s=%q: %w (build the programs with scripts/kube-bin)", BinVar, dir, err)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return source{}, fmt.Errorf("kubeenv: %s=%q: %s is not an executable file", BinVar, dir, name)
		}
	}
	return source{bin: dir}, nil
}

// skipOrFail ends the test because there is no server: it skips, or fails
// when the environment variable CI is "true".
func skipOrFail(t testing.TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true, so this is a failure, not a skip)", err)
	}
	t.Skip(err)
}
