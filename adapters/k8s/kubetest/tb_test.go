package kubetest

import (
	"context"
	"io"
	"testing"
)

// ginkgoT has the method set of Ginkgo v2's GinkgoTInterface (v2.34),
// whose Skip, like Ginkgo's, panics to end the node; the rest do little.
type ginkgoT struct{ ctx context.Context }

type skipSignal struct{ args []any }

func (g *ginkgoT) Cleanup(func())               {}
func (g *ginkgoT) Chdir(string)                 {}
func (g *ginkgoT) Context() context.Context     { return g.ctx }
func (g *ginkgoT) Setenv(string, string)        {}
func (g *ginkgoT) Error(...any)                 {}
func (g *ginkgoT) Errorf(string, ...any)        {}
func (g *ginkgoT) Fail()                        {}
func (g *ginkgoT) FailNow()                     { panic("FailNow") }
func (g *ginkgoT) Failed() bool                 { return false }
func (g *ginkgoT) Fatal(args ...any)            { panic(args) }
func (g *ginkgoT) Fatalf(f string, args ...any) { panic(f) }
func (g *ginkgoT) Helper()                      {}
func (g *ginkgoT) Log(...any)                   {}
func (g *ginkgoT) Logf(string, ...any)          {}
func (g *ginkgoT) Name() string                 { return "ginkgo node" }
func (g *ginkgoT) Parallel()                    {}
func (g *ginkgoT) Skip(args ...any)             { panic(skipSignal{args}) }
func (g *ginkgoT) SkipNow()                     { panic(skipSignal{}) }
func (g *ginkgoT) Skipf(f string, args ...any)  { panic(skipSignal{[]any{f}}) }
func (g *ginkgoT) Skipped() bool                { return false }
func (g *ginkgoT) TempDir() string              { return "" }
func (g *ginkgoT) Attr(string, string)          {}
func (g *ginkgoT) Output() io.Writer            { return io.Discard }
func (g *ginkgoT) ArtifactDir() string          { return "" }

var _ TB = (*ginkgoT)(nil) // GinkgoT() can be passed

// TestStartSkipsThroughGinkgoT: with no server configured, Start given a
// GinkgoT()-like T from another goroutine (a Ginkgo BeforeSuite node)
// skips through that T's Skip, which Ginkgo turns into a skipped suite,
// and never through the testing package's (which, off the test's
// goroutine, would hang the suite).
func TestStartSkipsThroughGinkgoT(t *testing.T) {
	t.Setenv(KubeconfigVar, "")
	t.Setenv(BinVar, "")
	t.Setenv(AssetsVar, "")
	t.Setenv("CI", "")
	got := make(chan any, 1)
	go func() {
		defer func() { got <- recover() }()
		Start(&ginkgoT{ctx: t.Context()})
	}()
	if r := <-got; r == nil {
		t.Errorf("Start with no server returned, want the GinkgoT's Skip")
	} else if _, ok := r.(skipSignal); !ok {
		t.Errorf("Start with no server ended with %v, want the GinkgoT's Skip", r)
	}
}
