package opbus

import (
	"testing"
	"testing/synctest"
	"time"
)

// TestRunRetriesRecordLoadMetBeforeRun: a record that could not be read
// before Run (a Wait before Run lists the store, finds the key and fails
// to load its record) is tried again under Run, with backoff, like any
// failure met before Run (rule 27): once the record is repaired, the
// states observed under Run are handled. (Before, the key's queue stayed
// blocked for the whole run: nothing armed its retry, and Wait and Settle
// returned with its states never dispatched.)
func TestRunRetriesRecordLoadMetBeforeRun(t *testing.T) {
	for _, observeFirst := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			store := NewMemoryStore()
			must(t, store.Save(t.Context(), podKey, []byte(`not json`)))
			b := newBus(t, &Options{Store: store, Workers: 1})
			var h recorder
			must(t, b.Handle("h", h.handle, On{}))
			if observeFirst {
				must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 1}))
			}
			must(t, b.Wait(t.Context())) // lists the store, fails to load the record
			stop := run(t, b)
			defer func() { must(t, stop()) }()
			must(t, store.Delete(t.Context(), podKey)) // repaired
			must(t, b.Observe(t.Context(), podKey, map[string]any{"a": 2}))
			time.Sleep(time.Minute) // backoff: 1s, 2s, ...
			synctest.Wait()
			want := 1
			if observeFirst {
				want = 2 // each state observed, in order
			}
			if n := h.count(); n != want {
				t.Fatalf("observe before Run=%v: after a record that could not be read before Run was repaired, the handler ran %d times under Run, want %d", observeFirst, n, want)
			}
		})
	}
}
