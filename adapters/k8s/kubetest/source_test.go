package kubetest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestLookupSource(t *testing.T) {
	full := t.TempDir()
	for _, name := range []string{etcdProgram, apiServerProgram} {
		if err := os.WriteFile(filepath.Join(full, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	noEtcd := t.TempDir()
	if err := os.WriteFile(filepath.Join(noEtcd, apiServerProgram), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	notExec := t.TempDir()
	for _, name := range []string{etcdProgram, apiServerProgram} {
		if err := os.WriteFile(filepath.Join(notExec, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	tests := []struct {
		name    string
		env     map[string]string
		want    source
		wantErr bool // any error
		noSrv   bool // errNoServer in particular
	}{
		{name: "nothing set means no server, so a skip", env: nil, noSrv: true, wantErr: true},
		{name: "a kubeconfig is used as is", env: map[string]string{KubeconfigVar: "/k/config"}, want: source{kubeconfig: "/k/config"}},
		{name: "a kubeconfig wins over binaries", env: map[string]string{KubeconfigVar: "/k/config", BinVar: full}, want: source{kubeconfig: "/k/config"}},
		{name: "a directory with both programs", env: map[string]string{BinVar: full}, want: source{bin: full, binVar: BinVar}},
		{name: "setup-envtest's directory when OPBUS_KUBE_BIN is unset", env: map[string]string{AssetsVar: full}, want: source{bin: full, binVar: AssetsVar}},
		{name: "OPBUS_KUBE_BIN wins over setup-envtest's directory", env: map[string]string{BinVar: full, AssetsVar: noEtcd}, want: source{bin: full, binVar: BinVar}},
		{name: "a kubeconfig wins over setup-envtest's directory", env: map[string]string{KubeconfigVar: "/k/config", AssetsVar: full}, want: source{kubeconfig: "/k/config"}},
		{name: "setup-envtest's directory is checked as strictly", env: map[string]string{AssetsVar: noEtcd}, wantErr: true},
		{name: "a missing program is an error, not a skip", env: map[string]string{BinVar: noEtcd}, wantErr: true},
		{name: "programs must be executable", env: map[string]string{BinVar: notExec}, wantErr: true},
		{name: "a missing directory is an error", env: map[string]string{BinVar: filepath.Join(full, "nope")}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookupSource(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr || errors.Is(err, errNoServer) != tt.noSrv {
				t.Fatalf("got error %v, want error %v (no server: %v)", err, tt.wantErr, tt.noSrv)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
