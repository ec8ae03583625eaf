package kubetest

import (
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// WriteKubeconfig writes a kubeconfig file for cfg (nil means
// [Env.AdminConfig]) into a temporary directory of t and returns its path,
// for a test that runs an operator as a process of its own, the way it
// runs in a cluster: KUBECONFIG=<path> ./operator. The file holds cfg's
// server, CA, client certificate or bearer token, and impersonated user.
func (e *Env) WriteKubeconfig(t TB, cfg *rest.Config) string {
	t.Helper()
	if cfg == nil {
		cfg = e.AdminConfig()
	}
	if err := rest.LoadTLSFiles(cfg); err != nil {
		t.Fatalf("kubetest: reading the TLS files of the configuration: %v", err)
	}
	user := &clientcmdapi.AuthInfo{
		ClientCertificateData: cfg.CertData,
		ClientKeyData:         cfg.KeyData,
		Token:                 cfg.BearerToken,
		TokenFile:             cfg.BearerTokenFile,
		Username:              cfg.Username,
		Password:              cfg.Password,
		Impersonate:           cfg.Impersonate.UserName,
		ImpersonateUID:        cfg.Impersonate.UID,
		ImpersonateGroups:     cfg.Impersonate.Groups,
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["kubetest"] = &clientcmdapi.Cluster{
		Server:                   cfg.Host,
		CertificateAuthorityData: cfg.CAData,
		InsecureSkipTLSVerify:    cfg.Insecure,
		TLSServerName:            cfg.ServerName,
	}
	kc.AuthInfos["kubetest"] = user
	kc.Contexts["kubetest"] = &clientcmdapi.Context{Cluster: "kubetest", AuthInfo: "kubetest"}
	kc.CurrentContext = "kubetest"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatalf("kubetest: writing %s: %v", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatalf("kubetest: %v", err)
	}
	return path
}
