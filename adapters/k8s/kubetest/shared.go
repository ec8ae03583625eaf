package kubetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// shared is the server of the package's tests, started by the first call to
// Shared and stopped by Main.
var shared struct {
	inMain  atomic.Bool // Main is running the tests
	once    sync.Once
	env     *Env
	dir     string // temporary directory of a server that kubetest started
	err     error
	started string // what to log once the server is up
}

// Main runs the package's tests with m and then stops the server that
// [Shared] started, if any. Call it from TestMain:
//
//	func TestMain(m *testing.M) { kubetest.Main(m) }
//
// The test binary then exits with the result of the tests.
func Main(m *testing.M) {
	shared.inMain.Store(true)
	defer shared.inMain.Store(false)
	code := m.Run()
	if err := stopShared(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			os.Exit(1)
		}
	}
}

// Shared returns the server shared by the package's tests, starting it on
// the first call; it is chosen as the package documentation describes. Like
// [Start], it skips the test when there is no server (or fails it when the
// environment variable CI is "true"). The package's TestMain must call
// [Main], which stops the server after the last test. Tests sharing the
// server should each work in their own [Env.Namespace].
func Shared(t TB) *Env {
	t.Helper()
	if !shared.inMain.Load() {
		t.Fatal("kubetest: Shared needs a TestMain that calls kubetest.Main(m)")
	}
	first := false
	shared.once.Do(func() {
		first = true
		startShared(t.Context())
	})
	if errors.Is(shared.err, errNoServer) {
		skipOrFail(t, shared.err)
	}
	if shared.err != nil {
		t.Fatalf("%v (shared server)", shared.err)
	}
	if first {
		t.Log(shared.started)
	}
	return shared.env
}

// startShared starts the shared server and records the result in shared.
// ctx bounds only the start.
func startShared(ctx context.Context) {
	src, err := lookupSource(os.Getenv)
	if err != nil {
		shared.err = err
		return
	}
	begin := time.Now()
	if src.kubeconfig != "" {
		shared.env, shared.err = connect(ctx, src.kubeconfig)
		if shared.err == nil {
			shared.started = fmt.Sprintf("kubetest: shared: using the cluster at %s from %s=%s",
				shared.env.admin.Host, KubeconfigVar, src.kubeconfig)
		}
		return
	}
	shared.dir, err = os.MkdirTemp("", "opbus-kubetest-")
	if err != nil {
		shared.err = fmt.Errorf("kubetest: %w", err)
		return
	}
	shared.env, shared.err = launch(ctx, src.bin, shared.dir, nil)
	if shared.err == nil {
		shared.started = fmt.Sprintf("kubetest: shared: kube-apiserver ready at %s in %v (programs from %s=%s, files in %s)",
			shared.env.admin.Host, time.Since(begin).Round(time.Millisecond), src.binVar, src.bin, shared.dir)
	}
}

// stopShared stops the shared server, if kubetest started one, and removes
// its files.
func stopShared() error {
	var err error
	if shared.env != nil && shared.env.local != nil {
		err = shared.env.local.stop()
	}
	if shared.dir != "" {
		if rmErr := os.RemoveAll(shared.dir); rmErr != nil && err == nil {
			err = fmt.Errorf("kubetest: %w", rmErr)
		}
	}
	return err
}
