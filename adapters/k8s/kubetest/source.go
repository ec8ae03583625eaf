package kubetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
	// AssetsVar names the variable that controller-runtime's setup-envtest
	// sets to a directory with kube-apiserver and etcd; it is used when
	// [BinVar] is not set.
	AssetsVar = "KUBEBUILDER_ASSETS"
)

// howToGetServer tells a user how to get the programs or a cluster.
const howToGetServer = "set " + BinVar + " to a directory with kube-apiserver and etcd " +
	"(scripts/kube-bin in a clone of github.com/opbus/opbus builds them from the Go module proxy: " +
	"export " + BinVar + "=$(scripts/kube-bin), about 10-12 min the first time), " +
	"or " + AssetsVar + " to such a directory made by setup-envtest, " +
	"or " + KubeconfigVar + " to the kubeconfig of an existing cluster"

// errNoServer means that none of [KubeconfigVar], [BinVar] and [AssetsVar]
// is set.
var errNoServer = errors.New("kubetest: no Kubernetes API server for this test: " + howToGetServer)

// source is where the API server comes from: exactly one field is set.
type source struct {
	kubeconfig string // path of a kubeconfig for an existing cluster
	bin        string // directory with kube-apiserver and etcd
	binVar     string // the variable that named bin: BinVar or AssetsVar
}

// lookupSource reads the environment through getenv. It returns errNoServer
// when nothing is configured, and another error when a setting is unusable.
func lookupSource(getenv func(string) string) (source, error) {
	if path := getenv(KubeconfigVar); path != "" {
		return source{kubeconfig: path}, nil
	}
	name, dir := BinVar, getenv(BinVar)
	if dir == "" {
		name, dir = AssetsVar, getenv(AssetsVar)
	}
	if dir == "" {
		return source{}, errNoServer
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return source{}, fmt.Errorf("kubetest: %s=%q: %w", name, dir, err)
	}
	for _, program := range []string{etcdProgram, apiServerProgram} {
		info, err := os.Stat(filepath.Join(dir, program))
		if err != nil {
			return source{}, fmt.Errorf("kubetest: %s=%q: %w; %s", name, dir, err, howToGetServer)
		}
		if !info.Mode().IsRegular() || info.Mode().Perm()&0o111 == 0 {
			return source{}, fmt.Errorf("kubetest: %s=%q: %s is not an executable file", name, dir, program)
		}
	}
	return source{bin: dir, binVar: name}, nil
}

// skipOrFail ends the test because there is no server: it skips, or fails
// when the environment variable CI is "true".
func skipOrFail(t TB, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%v (CI=true, so this is a failure, not a skip)", err)
	}
	t.Skip(err)
}
