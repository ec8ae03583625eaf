package jujutest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// hooktoolsPackage is the import path of the hooktools program.
const hooktoolsPackage = "github.com/opbus/opbus/adapters/juju/jujutest/hooktools"

// installed caches the tools directory for the life of the test process.
var installed struct {
	sync.Mutex
	dir string
	err error
}

// InstallTools builds the hooktools program (with the go command found in
// PATH, once per test process) and returns a directory holding it and a
// symlink to it named after every tool in [ToolNames]. A test runs a charm
// as a process with that directory first in PATH and [ModelEnv] naming a
// model file, then calls [CommitFile] or [DiscardFile].
//
// The directory is shared and must not be changed. It is named after the
// binary's SHA-256 under the user's cache directory, so test processes
// building the same binary share one copy instead of leaving one behind
// each; without a cache directory it is a temporary directory that stays
// after the process exits.
func InstallTools(t testing.TB) string {
	t.Helper()
	installed.Lock()
	defer installed.Unlock()
	if installed.dir == "" && installed.err == nil {
		installed.dir, installed.err = buildTools()
	}
	if installed.err != nil {
		t.Fatalf("jujutest: installing hook tools: %v", installed.err)
	}
	return installed.dir
}

// buildTools builds hooktools and its symlinks into a new directory, then
// moves it to (or reuses) the directory named after the binary's digest.
func buildTools() (string, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return "", fmt.Errorf("the go command is needed to build %s: %w", hooktoolsPackage, err)
	}
	root := ""
	if cache, err := os.UserCacheDir(); err == nil {
		root = filepath.Join(cache, "opbus-hooktools")
		if err := os.MkdirAll(root, 0o700); err != nil {
			root = ""
		}
	}
	dir, err := os.MkdirTemp(root, ".build-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "hooktools")
	cmd := exec.Command(goTool, "build", "-o", bin, hooktoolsPackage)
	if out, err := cmd.CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("go build %s: %w\n%s", hooktoolsPackage, err, out)
	}
	for _, name := range ToolNames() {
		if err := os.Symlink("hooktools", filepath.Join(dir, name)); err != nil {
			os.RemoveAll(dir)
			return "", err
		}
	}
	if root == "" {
		return dir, nil
	}
	sum, err := fileDigest(bin)
	if err != nil {
		os.RemoveAll(dir)
		return "", err
	}
	shared := filepath.Join(root, hex.EncodeToString(sum[:16]))
	if os.Rename(dir, shared) == nil {
		return shared, nil
	}
	// Another process installed the same binary first (or the directory
	// is damaged, in which case this process keeps its own copy).
	if toolsIntact(shared, sum) {
		os.RemoveAll(dir)
		return shared, nil
	}
	return dir, nil
}

// toolsIntact reports whether dir holds the binary with digest sum and a
// symlink to it for every tool.
func toolsIntact(dir string, sum []byte) bool {
	got, err := fileDigest(filepath.Join(dir, "hooktools"))
	if err != nil || !bytes.Equal(got, sum) {
		return false
	}
	for _, name := range ToolNames() {
		if target, err := os.Readlink(filepath.Join(dir, name)); err != nil || target != "hooktools" {
			return false
		}
	}
	return true
}

// fileDigest returns the SHA-256 of the file at path.
func fileDigest(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	return sum[:], nil
}
