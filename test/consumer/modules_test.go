package consumer

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/semver"
)

// rootPath is the module path of the repository's root module; every module of
// the repository has a path under it.
const rootPath = "github.com/opbus/opbus"

// k8sPath is the module path of the Kubernetes adapter.
const k8sPath = rootPath + "/adapters/k8s"

// A repoModule is one go.mod of the repository.
type repoModule struct {
	dir  string // absolute
	file *modfile.File
}

// repoRoot returns the repository's root directory: the nearest parent holding
// the go.mod of rootPath.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && modfile.ModulePath(b) == rootPath {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatalf("consumer: no parent directory of the test holds the go.mod of %s", rootPath)
		}
		dir = parent
	}
}

// repoModules returns every module of the repository, by module path. Hidden
// directories (.git, .cache) and testdata are not searched.
func repoModules(t *testing.T, root string) map[string]repoModule {
	t.Helper()
	mods := map[string]repoModule{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(path, b, nil)
		if err != nil {
			return err
		}
		mods[f.Module.Mod.Path] = repoModule{dir: filepath.Dir(path), file: f}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := mods[rootPath]; !ok {
		t.Fatalf("consumer: no go.mod of %s under %s", rootPath, root)
	}
	return mods
}

// releaseVersions returns the version at which the repository's go.mod files
// require each module of the repository. It fails the test unless every such
// requirement names a release (a semantic version, not a pseudo-version, which
// no proxy can serve for a module that was never published at that commit), the
// go.mod files agree on it, and the requiring go.mod keeps a replace to the
// module's directory in the repository, so that work inside the repository
// builds against the tree.
func releaseVersions(t *testing.T, mods map[string]repoModule) map[string]string {
	t.Helper()
	versions := map[string]string{}
	named := map[string]string{} // the go.mod that first named versions[path]
	for _, m := range mods {
		gomod := m.file.Syntax.Name
		for _, r := range m.file.Require {
			dep, ok := mods[r.Mod.Path]
			if !ok {
				continue
			}
			v := r.Mod.Version
			switch {
			case module.IsPseudoVersion(v):
				t.Errorf("%s requires %s at the pseudo-version %s, which nobody outside the repository can resolve: require a release (see RELEASING.md)", gomod, r.Mod.Path, v)
				continue
			case !semver.IsValid(v) || semver.Canonical(v) != v || semver.Prerelease(v) != "" || semver.Build(v) != "":
				t.Errorf("%s requires %s at %q: want a release version such as v1.2.3", gomod, r.Mod.Path, v)
				continue
			}
			if prev, ok := versions[r.Mod.Path]; ok && prev != v {
				t.Errorf("%s requires %s %s but %s requires %s: every go.mod of the repository requires the same release", gomod, r.Mod.Path, v, named[r.Mod.Path], prev)
			} else if !ok {
				versions[r.Mod.Path], named[r.Mod.Path] = v, gomod
			}
			if !replacedByDir(m, r.Mod.Path, dep.dir) {
				rel, _ := filepath.Rel(m.dir, dep.dir)
				t.Errorf("%s requires %s without `replace %s => %s`: work inside the repository would build against the published release, not the tree", gomod, r.Mod.Path, r.Mod.Path, filepath.ToSlash(rel))
			}
		}
	}
	return versions
}

// replacedByDir reports whether m replaces every version of path by dir.
func replacedByDir(m repoModule, path, dir string) bool {
	for _, r := range m.file.Replace {
		if r.Old.Path != path || r.Old.Version != "" || r.New.Version != "" {
			continue
		}
		to := r.New.Path
		if !filepath.IsAbs(to) {
			to = filepath.Join(m.dir, filepath.FromSlash(to))
		}
		if filepath.Clean(to) == filepath.Clean(dir) {
			return true
		}
	}
	return false
}

// TestNestedModulesRequireReleases: every go.mod of the repository that
// requires another module of the repository names a release of it (not the
// pseudo-version that a bare replace leaves), the same release everywhere, and
// keeps the replace to its directory; the Kubernetes adapter and the benchmarks
// require the root module, the controller-runtime module ctrlmgr requires
// the root module and the adapter, the example operator webapp all three,
// and the example operator cronjob the root module and the adapter.
func TestNestedModulesRequireReleases(t *testing.T) {
	mods := repoModules(t, repoRoot(t))
	versions := releaseVersions(t, mods)
	if versions[rootPath] == "" {
		t.Fatalf("no go.mod of the repository requires %s", rootPath)
	}
	for _, c := range []struct{ path, requires string }{
		{k8sPath, rootPath},
		{rootPath + "/bench", rootPath},
		{k8sPath + "/ctrlmgr", rootPath},
		{k8sPath + "/ctrlmgr", k8sPath},
		{k8sPath + "/examples/webapp", rootPath},
		{k8sPath + "/examples/webapp", k8sPath},
		{k8sPath + "/examples/webapp", k8sPath + "/ctrlmgr"},
		{k8sPath + "/examples/cronjob", rootPath},
		{k8sPath + "/examples/cronjob", k8sPath},
	} {
		m, ok := mods[c.path]
		if !ok {
			t.Errorf("no module %s in the repository", c.path)
			continue
		}
		found := false
		for _, r := range m.file.Require {
			found = found || r.Mod.Path == c.requires
		}
		if !found {
			t.Errorf("%s does not require %s", m.file.Syntax.Name, c.requires)
		}
	}
}
