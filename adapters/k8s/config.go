package k8s

import (
	"errors"
	"fmt"
	"io/fs"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig returns the client configuration for [Options].Config: that
// of the current context of the kubeconfig file at path, with the file's
// relative paths (of certificates, keys, token files) taken relative to
// its directory, as kubectl does; or, when path is "", the configuration
// of the Pod the program runs in (rest.InClusterConfig). Pass
// os.Getenv("KUBECONFIG") to honour that variable for a single file.
//
// Errors start with "k8s: kubeconfig" and name the file: one that cannot
// be read, is not a kubeconfig, or whose current context is incomplete.
func LoadConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("k8s: kubeconfig: none given, and not in a Pod: %w", err)
		}
		return cfg, nil
	}
	raw, err := clientcmd.LoadFromFile(path)
	if err != nil {
		if pe, ok := errors.AsType[*fs.PathError](err); ok {
			return nil, fmt.Errorf("k8s: kubeconfig %s: %w", path, pe.Err)
		}
		return nil, fmt.Errorf("k8s: kubeconfig %s: not a kubeconfig: %w", path, err)
	}
	if err := clientcmd.ResolveLocalPaths(raw); err != nil {
		return nil, fmt.Errorf("k8s: kubeconfig %s: %w", path, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("k8s: kubeconfig %s: %w", path, err)
	}
	return cfg, nil
}
