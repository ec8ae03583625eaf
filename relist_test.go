package opbus

import (
	"context"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
)

// restartedRelated builds, on store, a bus with the relation of the tests
// and the readiness handler on related.Deployment[*].status.readyReplicas,
// runs it, and returns it with its runs and a function that observes a
// state (nil: a deletion) and waits until it is handled. The bus stops at
// the end of the test, or when stop is called.
func restartedRelated(t *testing.T, store Store) (b *Bus, r *readiness, observe func(Key, map[string]any), stop func()) {
	t.Helper()
	b = newBus(t, &Options{Store: store})
	must(t, b.Relate("Deployment", ownersOf))
	r = &readiness{}
	must(t, b.Handle("ready", r.handle, On{Kinds: []string{"WebApp"}, Fields: []string{"related.Deployment[*].status.readyReplicas"}}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	for running := false; !running; runtime.Gosched() {
		// Observed before Run, a state would be dispatched by Wait, which
		// does not wait for related objects.
		b.mu.Lock()
		running = b.running
		b.mu.Unlock()
	}
	stopped := false
	stop = func() {
		t.Helper()
		if stopped {
			return
		}
		stopped = true
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}
	t.Cleanup(stop)
	observe = func(k Key, doc map[string]any) {
		t.Helper()
		if doc == nil {
			must(t, b.ObserveDelete(ctx, k, nil))
		} else {
			must(t, b.Observe(ctx, k, doc))
		}
		must(t, b.Wait(ctx))
	}
	return b, r, observe, stop
}

// relistStore returns a new store of kind ("memory" or "file") and a
// function that opens it again, as a new process would.
func relistStore(t *testing.T, kind string) func() Store {
	if kind == "memory" {
		s := NewMemoryStore()
		return func() Store { return s }
	}
	dir := t.TempDir()
	return func() Store {
		fs, err := NewFileStore(dir)
		must(t, err)
		return fs
	}
}

// TestRelatedRestartParentFirst: after a restart, an unchanged relist that
// observes a WebApp before its Deployment runs nothing: while the relist
// lasts, the WebApp's handler does not run on a value other than the one
// it handled (an empty view), and the Deployment brings that value back.
// (It ran twice, "update:" then "update:web=1".)
func TestRelatedRestartParentFirst(t *testing.T) {
	for _, kind := range relatedStores {
		t.Run(kind, func(t *testing.T) {
			open := relistStore(t, kind)
			_, r1, observe, stop := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			stop()
			checkRuns(t, r1, "shop", "create:", "update:web=1")

			b, r2, observe, _ := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			b.Synced()
			must(t, b.Wait(t.Context()))
			checkRuns(t, r2, "shop")
		})
	}
}

// TestRelatedRestartChildFirst: in the other listing order, an unchanged
// relist runs nothing either.
func TestRelatedRestartChildFirst(t *testing.T) {
	for _, kind := range relatedStores {
		t.Run(kind, func(t *testing.T) {
			open := relistStore(t, kind)
			_, _, observe, stop := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			stop()

			b, r2, observe, _ := restartedRelated(t, open())
			observe(deployKey("web"), deployment("web", 1, "shop"))
			observe(appKey("shop"), webAppDoc("shop", 1))
			b.Synced()
			must(t, b.Wait(t.Context()))
			checkRuns(t, r2, "shop")
		})
	}
}

// TestRelatedRestartChangedWhileDown: a Deployment that changed while no
// bus ran runs the WebApp's handler once, on the complete view, whichever
// of the two the relist observes first.
func TestRelatedRestartChangedWhileDown(t *testing.T) {
	for _, kind := range relatedStores {
		t.Run(kind, func(t *testing.T) {
			open := relistStore(t, kind)
			_, _, observe, stop := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			observe(deployKey("db"), deployment("db", 1, "shop"))
			stop()

			b, r2, observe, _ := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 2, "shop"))
			checkRuns(t, r2, "shop") // db is not observed yet
			observe(deployKey("db"), deployment("db", 1, "shop"))
			b.Synced()
			must(t, b.Wait(t.Context()))
			checkRuns(t, r2, "shop", "update:db=1,web=2")
		})
	}
}

// TestRelatedRestartChildDeletedWhileDown: a Deployment deleted while no
// bus ran, which the relist therefore never observes, is gone at the end
// of the relist (Bus.Synced): the WebApp's handler then runs once, on the
// view without it, and not before.
func TestRelatedRestartChildDeletedWhileDown(t *testing.T) {
	for _, kind := range relatedStores {
		t.Run(kind, func(t *testing.T) {
			open := relistStore(t, kind)
			_, _, observe, stop := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			observe(deployKey("db"), deployment("db", 1, "shop"))
			stop()

			b, r2, observe, _ := restartedRelated(t, open())
			observe(appKey("shop"), webAppDoc("shop", 1))
			observe(deployKey("web"), deployment("web", 1, "shop"))
			checkRuns(t, r2, "shop")
			b.Synced()
			must(t, b.Wait(t.Context()))
			checkRuns(t, r2, "shop", "update:web=1")
			b.Synced() // again: nothing more
			must(t, b.Wait(t.Context()))
			checkRuns(t, r2, "shop", "update:web=1")
		})
	}
}

// TestRelatedRestartQuietEndsRelist: without Bus.Synced, Run ends the
// relist once no object was observed for relistQuiet and nothing is
// queued: a Deployment deleted while down still runs the WebApp's handler
// once.
func TestRelatedRestartQuietEndsRelist(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := relistStore(t, "memory")
		_, _, observe, stop := restartedRelated(t, open())
		observe(appKey("shop"), webAppDoc("shop", 1))
		observe(deployKey("web"), deployment("web", 1, "shop"))
		stop()

		_, r2, observe, stop := restartedRelated(t, open())
		observe(appKey("shop"), webAppDoc("shop", 1))
		time.Sleep(relistQuiet / 2)
		synctest.Wait()
		checkRuns(t, r2, "shop")
		time.Sleep(2 * relistQuiet)
		synctest.Wait()
		checkRuns(t, r2, "shop", "update:")
		stop()
	})
}

// TestRelatedRestartWholeViewEndsWait: once the relist has brought back
// the view the WebApp's handler handled, the WebApp waits no more: a
// later change of a Deployment runs the handler at once, before the
// relist ends.
func TestRelatedRestartWholeViewEndsWait(t *testing.T) {
	open := relistStore(t, "memory")
	_, _, observe, stop := restartedRelated(t, open())
	observe(appKey("shop"), webAppDoc("shop", 1))
	observe(deployKey("web"), deployment("web", 1, "shop"))
	stop()

	_, r2, observe, _ := restartedRelated(t, open())
	observe(appKey("shop"), webAppDoc("shop", 1))
	observe(deployKey("web"), deployment("web", 1, "shop"))
	observe(deployKey("web"), deployment("web", 2, "shop"))
	checkRuns(t, r2, "shop", "update:web=2")
}

// TestRelatedRestartDispatchDoesNotWait: a Dispatch of the WebApp during
// the relist does not wait for its Deployment: it handles the view as far
// as it is known (rule 34), as it did before the relist waited.
func TestRelatedRestartDispatchDoesNotWait(t *testing.T) {
	open := relistStore(t, "memory")
	_, _, observe, stop := restartedRelated(t, open())
	observe(appKey("shop"), webAppDoc("shop", 1))
	observe(deployKey("web"), deployment("web", 1, "shop"))
	stop()

	b, r2, observe, _ := restartedRelated(t, open())
	observe(appKey("shop"), webAppDoc("shop", 1))
	checkRuns(t, r2, "shop")
	must(t, b.Dispatch(t.Context(), appKey("shop"), webAppDoc("shop", 1)))
	checkRuns(t, r2, "shop", "update:")
}
