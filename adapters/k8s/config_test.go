package k8s_test

import (
	"path/filepath"
	"testing"

	"github.com/opbus/opbus/adapters/k8s"
)

// TestLoadConfig loads a kubeconfig whose token file is named relative to
// it: the path is taken relative to the kubeconfig's directory, as kubectl
// does, whatever the working directory. The errors are in the bad-input
// catalogue.
func TestLoadConfig(t *testing.T) {
	cfg, err := k8s.LoadConfig("testdata/kubeconfig.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:6443" {
		t.Errorf("Host = %q, want https://127.0.0.1:6443", cfg.Host)
	}
	want, err := filepath.Abs("testdata/token")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BearerTokenFile != want {
		t.Errorf("BearerTokenFile = %q, want %q", cfg.BearerTokenFile, want)
	}
}
