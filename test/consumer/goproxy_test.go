package consumer

import (
	"encoding/json"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// addToProxy publishes the module in dir at version m.Version into the
// file-based module proxy rooted at proxy, in the layout `go help goproxy`
// describes: $module/@v/list, $version.info, $version.mod and $version.zip,
// paths and versions escaped. The zip holds what a proxy serves for a tag: the
// module's files, without nested modules and hidden directories (.git, the
// .cache of built binaries).
func addToProxy(proxy string, m module.Version, dir string) error {
	escPath, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	escVer, err := module.EscapeVersion(m.Version)
	if err != nil {
		return err
	}
	at := filepath.Join(proxy, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, escVer+".mod"), gomod, 0o644); err != nil {
		return err
	}
	info, err := json.Marshal(struct {
		Version string
		Time    time.Time
	}{m.Version, time.Now().UTC().Truncate(time.Second)})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(at, escVer+".info"), info, 0o644); err != nil {
		return err
	}
	list, err := os.OpenFile(filepath.Join(at, "list"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.WriteString(list, m.Version+"\n"); err != nil {
		list.Close()
		return err
	}
	if err := list.Close(); err != nil {
		return err
	}
	files, err := moduleFiles(dir)
	if err != nil {
		return err
	}
	z, err := os.Create(filepath.Join(at, escVer+".zip"))
	if err != nil {
		return err
	}
	if err := zip.Create(z, m, files); err != nil {
		z.Close()
		return err
	}
	return z.Close()
}

// moduleFiles lists the regular files of the module in dir, leaving out
// hidden directories and the directories of nested modules.
func moduleFiles(dir string) ([]zip.File, error) {
	var files []zip.File
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path == dir {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			if _, err := os.Lstat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a nested module: published on its own
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		files = append(files, dirFile{rel: filepath.ToSlash(rel), abs: path})
		return nil
	})
	return files, err
}

// dirFile is a file of the working tree, for zip.Create.
type dirFile struct{ rel, abs string }

func (f dirFile) Path() string                 { return f.rel }
func (f dirFile) Lstat() (os.FileInfo, error)  { return os.Lstat(f.abs) }
func (f dirFile) Open() (io.ReadCloser, error) { return os.Open(f.abs) }
