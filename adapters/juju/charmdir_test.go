package juju

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestReadConfigOptions(t *testing.T) {
	charmcraft := `type: charm
config:
  options:
    kind:
      type: string
      description: |
        Which gateway: ingress or egress.
        port: not an option
    "quoted-key":
      type: int
parts:
  charm:
    prime:
      - bin/x
`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
		err   error // nil, or what the error wraps
	}{
		{"config.yaml", map[string]string{"metadata.yaml": "name: x\n", "config.yaml": "options:\n  b:\n    type: int\n  a:\n    type: string # a comment\n"}, []string{"a", "b"}, nil},
		{"config.yaml without options", map[string]string{"config.yaml": "# none\n"}, []string{}, nil},
		{"charmcraft.yaml", map[string]string{"charmcraft.yaml": charmcraft}, []string{"kind", "quoted-key"}, nil},
		{"config.yaml first", map[string]string{"charmcraft.yaml": charmcraft, "config.yaml": "options:\n  only:\n"}, []string{"only"}, nil},
		{"charmcraft.yaml without config", map[string]string{"charmcraft.yaml": "type: charm\nname: x\n"}, []string{}, nil},
		{"metadata.yaml alone", map[string]string{"metadata.yaml": "name: x\n"}, []string{}, nil},
		{"no charm", nil, nil, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readConfigOptions(dir)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Errorf("got %v, %v; want an error wrapping %v", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("options: {a: {}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := readConfigOptions(dir); err == nil {
		t.Errorf("options in flow style: no error, want one rather than a silent miss")
	}
}

func TestFindCharmDir(t *testing.T) {
	charm, elsewhere := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(charm, "charmcraft.yaml"), []byte("type: charm\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	program := filepath.Join(charm, "bin", "web")
	for _, tc := range []struct {
		name, wd, charmDir, program, want string
	}{
		{"JUJU_CHARM_DIR, even without metadata", charm, elsewhere, program, elsewhere},
		{"the working directory", charm, "", "dispatch", charm},
		{"above the program", elsewhere, "", program, charm},
		{"the program's directory", elsewhere, "", filepath.Join(charm, "web"), charm},
		{"nowhere", elsewhere, "", filepath.Join(elsewhere, "bin", "web"), ""},
		{"a program found in PATH", elsewhere, "", "web", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Chdir(tc.wd)
			if got := findCharmDir(&Env{CharmDir: tc.charmDir}, tc.program); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestReadActionParams(t *testing.T) {
	charmcraft := `type: charm
actions:
  backup:
    description: Back up.
    params:
      target:
        type: string
      compress:
        type: boolean
  restore:
    params:
      target:
        type: string
      from:
        type: string
config:
  options:
    kind:
      type: string
`
	for _, tc := range []struct {
		name  string
		files map[string]string
		want  []string
		err   error
	}{
		{"actions.yaml", map[string]string{"actions.yaml": "backup:\n  params:\n    target:\n      type: string\nreset: {}\n", "metadata.yaml": "name: x\n"}, []string{"target"}, nil},
		{"charmcraft.yaml", map[string]string{"charmcraft.yaml": charmcraft}, []string{"compress", "from", "target"}, nil},
		{"charmcraft.yaml without actions", map[string]string{"charmcraft.yaml": "type: charm\n"}, []string{}, nil},
		{"metadata.yaml alone", map[string]string{"metadata.yaml": "name: x\n"}, []string{}, nil},
		{"no charm", nil, nil, fs.ErrNotExist},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, data := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := readActionParams(dir)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Errorf("got %v, %v; want an error wrapping %v", got, err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
