package kubetest

import (
	"context"
	"testing"
)

// TB is what kubetest needs of a test: the methods that testing.TB and
// Ginkgo's GinkgoT() have in common, so that a Ginkgo suite, as
// kubebuilder scaffolds one, calls kubetest from its nodes with
// GinkgoT():
//
//	var env *kubetest.Env
//
//	var _ = BeforeSuite(func() {
//		env = kubetest.Start(GinkgoT()) // skips the suite when there is no server
//		env.InstallCRDFiles(GinkgoT(), filepath.Join("..", "config", "crd", "bases"))
//	})
//
// With GinkgoT(), a missing server skips the suite through Ginkgo's own
// Skip, from the node's goroutine; the server started in BeforeSuite
// stops after the suite (GinkgoT's Cleanup is DeferCleanup). Passing the
// *testing.T of the suite's Test function into a node instead calls its
// Skip or FailNow on a goroutine that is not the test's, which the
// testing package does not allow: the suite hangs.
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

var _ TB = testing.TB(nil)
