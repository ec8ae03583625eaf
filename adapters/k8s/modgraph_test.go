package k8s_test

import (
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// goListDeps returns what `go list -deps -test ./...` lists in the module
// of dir: every package its packages, their tests and its programs build,
// as a user of the module gets them (GOWORK=off).
func goListDeps(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", "-test", "./...")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("go list -deps -test ./... in %s: %v\n%s", dir, err, stderr)
	}
	return strings.Fields(string(out))
}

// TestModuleGraph checks that users who do not use controller-runtime do
// not build it: the core module (../..), and this module — the adapter,
// its metrics, probes and servers, kubetest, the standalone program
// examples/podwatch, and all their tests — list no package of
// sigs.k8s.io/controller-runtime among their dependencies. The module
// adapters/k8s/ctrlmgr, which runs a Source inside a manager, does: that
// is where controller-runtime is required, and it shows the check looks
// at the right graph. Run by hand, the check is (see "Module graph" in
// the package documentation):
//
//	cd adapters/k8s && GOWORK=off go list -deps -test ./... | grep controller-runtime
//
// which prints nothing.
func TestModuleGraph(t *testing.T) {
	const crt = "sigs.k8s.io/controller-runtime"
	for _, c := range []struct {
		dir, name string
		want      string // a package the module must list, to show the listing is of the right module
		crt       bool   // controller-runtime is expected
	}{
		{"../..", "the core module", "github.com/opbus/opbus", false},
		{".", "the adapter module", "github.com/opbus/opbus/adapters/k8s/examples/podwatch", false},
		{"ctrlmgr", "the ctrlmgr module", "github.com/opbus/opbus/adapters/k8s/ctrlmgr", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			deps := goListDeps(t, c.dir)
			if !slices.Contains(deps, c.want) {
				t.Fatalf("go list in %s does not list %s: is it the right module?", c.dir, c.want)
			}
			var found []string
			for _, d := range deps {
				if d == crt || strings.HasPrefix(d, crt+"/") {
					found = append(found, d)
				}
			}
			if c.crt && len(found) == 0 {
				t.Errorf("%s lists no %s package: got none, want some", c.name, crt)
			}
			if !c.crt && len(found) > 0 {
				t.Errorf("%s depends on controller-runtime: %s", c.name, strings.Join(found, ", "))
			}
		})
	}
}
