package kubetest

import "context"

// TB is what kubetest needs of a test: *testing.T and *testing.B satisfy
// it, and so does Ginkgo's GinkgoT(), so that a suite scaffolded by
// kubebuilder starts its server in BeforeSuite:
//
//	var env *kubetest.Env
//
//	var _ = BeforeSuite(func() {
//		env = kubetest.Start(GinkgoT()) // stopped after the suite
//		env.InstallCRDFiles(GinkgoT(), "config/crd/bases/example.com_widgets.yaml")
//	})
type TB interface {
	Cleanup(func())
	Context() context.Context
	Error(args ...any)
	Errorf(format string, args ...any)
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Helper()
	Log(args ...any)
	Logf(format string, args ...any)
	Name() string
	Skip(args ...any)
	Skipf(format string, args ...any)
	TempDir() string
}
