package consumer

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/module"
)

// TestConsumerModule: a module outside the repository, with no replace line
// and no go.work, that imports github.com/opbus/opbus and
// github.com/opbus/opbus/adapters/k8s, adds the adapter at the version the
// repository releases it at (go get), gets the core at the version the
// adapter's go.mod requires, and then resolves, builds, vets and passes its
// test. The two modules come
// from a file-based proxy built from the working tree, so the check is of this
// tree as if its release tags had been pushed: it fails if the adapter's go.mod
// requires a version of the root module that was never released (such as the
// pseudo-version a bare replace leaves) or anything else the go command cannot
// resolve outside the repository. The consumer's tests include one that uses
// the adapter's kubetest package against a real API server when one is
// configured (OPBUS_KUBE_BIN, as scripts/test sets it).
func TestConsumerModule(t *testing.T) {
	root := repoRoot(t)
	versions := releaseVersions(t, repoModules(t, root))
	if t.Failed() {
		t.FailNow()
	}
	rootV := versions[rootPath]
	if rootV == "" {
		t.Fatalf("no go.mod of the repository requires %s, so no release of it is named", rootPath)
	}
	// Until a module of the repository requires the adapter, it is released
	// with the root module (RELEASING.md).
	k8sV := versions[k8sPath]
	if k8sV == "" {
		k8sV = rootV
	}

	proxy := t.TempDir()
	for _, m := range []struct {
		mod module.Version
		dir string
	}{
		{module.Version{Path: rootPath, Version: rootV}, root},
		{module.Version{Path: k8sPath, Version: k8sV}, filepath.Join(root, "adapters", "k8s")},
	} {
		if err := addToProxy(proxy, m.mod, m.dir); err != nil {
			t.Fatalf("publishing %s %s into the test proxy: %v", m.mod.Path, m.mod.Version, err)
		}
	}

	work := t.TempDir()
	if rel, err := filepath.Rel(root, work); err == nil && !strings.HasPrefix(rel, "..") {
		t.Fatalf("the consumer's directory %s is inside the repository %s", work, root)
	}
	writeConsumer(t, root, work)
	env := consumerEnv(t, proxy, filepath.Join(t.TempDir(), "modcache"))

	// As a user adds the adapter: go get resolves the core at the version the
	// adapter's go.mod requires, and tidy adds what the program imports.
	goCmd(t, work, env, "get", k8sPath+"@"+k8sV)
	goCmd(t, work, env, "mod", "tidy")
	// Both modules resolve to the releases, extracted from the proxy, not to the tree.
	out := goCmd(t, work, env, "list", "-m", "-f", "{{.Path}} {{.Version}} {{.Replace}} {{.Dir}}", rootPath, k8sPath)
	for _, want := range []struct{ path, version string }{{rootPath, rootV}, {k8sPath, k8sV}} {
		line := findLine(out, want.path+" ")
		f := strings.Fields(line)
		if len(f) != 4 || f[1] != want.version || f[2] != "<nil>" || strings.HasPrefix(f[3], root+string(filepath.Separator)) || f[3] == root {
			t.Errorf("go list -m %s: got %q, want version %s, no replacement, extracted outside the repository", want.path, line, want.version)
		}
	}
	goCmd(t, work, env, "build", "./...")
	goCmd(t, work, env, "vet", "./...")
	out = goCmd(t, work, env, "test", "-count=1", "-v", "./...")
	// With a server configured, the consumer's kubetest test must have run,
	// not skipped.
	if os.Getenv("OPBUS_KUBE_BIN") != "" || os.Getenv("OPBUS_TEST_KUBECONFIG") != "" || os.Getenv("KUBEBUILDER_ASSETS") != "" {
		if !strings.Contains(out, "--- PASS: TestWithAPIServer") {
			t.Errorf("a Kubernetes API server is configured, but the consumer's TestWithAPIServer did not pass:\n%s", out)
		}
	}
}

// writeConsumer writes the consumer module into work: the program and test of
// testdata/consumer, a go.mod that requires nothing yet, and a go.sum
// seeded from the repository's go.sum files, so that the modules they share
// are checked against the hashes the repository recorded.
func writeConsumer(t *testing.T, root, work string) {
	t.Helper()
	srcs, err := filepath.Glob(filepath.Join("testdata", "consumer", "*.go"))
	if err != nil || len(srcs) == 0 {
		t.Fatalf("no Go files in testdata/consumer (%v)", err)
	}
	for _, src := range srcs {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(work, filepath.Base(src)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goVersion := "1.26.0"
	if f := repoModules(t, root)[rootPath].file; f.Go != nil {
		goVersion = f.Go.Version
	}
	gomod := fmt.Sprintf("module example.com/consumer\n\ngo %s\n", goVersion)
	if err := os.WriteFile(filepath.Join(work, "go.mod"), []byte(gomod), 0o644); err != nil {
		t.Fatal(err)
	}
	var sum bytes.Buffer
	seen := map[string]bool{}
	for _, f := range []string{filepath.Join(root, "go.sum"), filepath.Join(root, "adapters", "k8s", "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" && !seen[line] {
				seen[line] = true
				sum.WriteString(line + "\n")
			}
		}
	}
	if err := os.WriteFile(filepath.Join(work, "go.sum"), sum.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// consumerEnv returns the environment of the go commands run on the consumer:
//   - GOPROXY: the test proxy first, then the local module cache read as a
//     proxy (it has the same layout), then whatever the environment names, so
//     that modules already downloaded are not fetched again;
//   - GOMODCACHE: a module cache of its own, so that the test's releases never
//     enter the user's cache, where they would stand for the real ones and go
//     stale as the tree changes (-modcacherw lets the test remove it);
//   - GONOSUMDB: the checksum database has never seen the test's releases.
//     GOPRIVATE would be wrong: it also sets GONOPROXY, which would bypass the
//     test proxy. GOPRIVATE and GONOPROXY are emptied for the same reason;
//   - -trimpath: the build cache then keys the dependencies by module version
//     rather than by the directory of the test's module cache, so that a second
//     run does not compile client-go again;
//   - GOWORK=off and GOTOOLCHAIN=local: nothing but the consumer and the
//     installed toolchain.
func consumerEnv(t *testing.T, proxy, modcache string) []string {
	t.Helper()
	get := func(name string) string {
		out, err := exec.Command("go", "env", name).Output()
		if err != nil {
			t.Fatalf("go env %s: %v", name, err)
		}
		return strings.TrimSpace(string(out))
	}
	goproxy := "file://" + filepath.ToSlash(proxy)
	if cache := get("GOMODCACHE"); cache != "" {
		goproxy += ",file://" + filepath.ToSlash(filepath.Join(cache, "cache", "download"))
	}
	if p := get("GOPROXY"); p != "" {
		goproxy += "," + p
	}
	nosumdb := rootPath
	if p := get("GONOSUMDB"); p != "" {
		nosumdb += "," + p
	}
	return append(os.Environ(),
		"GOPROXY="+goproxy,
		"GOMODCACHE="+modcache,
		"GONOSUMDB="+nosumdb,
		"GOPRIVATE=",
		"GONOPROXY=",
		"GOFLAGS="+strings.TrimSpace(get("GOFLAGS")+" -modcacherw -trimpath"),
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	)
}

// goCmd runs the go command in dir and returns its standard output; it fails
// the test with the command's whole output if it fails.
func goCmd(t *testing.T, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir, cmd.Env = dir, env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("go %s in the consumer module: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	t.Logf("go %s: %v", strings.Join(args, " "), time.Since(start).Round(10*time.Millisecond))
	return stdout.String()
}

// findLine returns the first line of out that starts with prefix, or "".
func findLine(out, prefix string) string {
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, prefix) {
			return line
		}
	}
	return ""
}
