package opbus

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	stored "github.com/opbus/opbus/internal/record"
)

// isTombstone reports whether data is a tombstone and nothing more: the
// record a finished deletion leaves (tombstone.go).
func isTombstone(data []byte) bool {
	w, err := stored.Parse[Slots](data)
	return err == nil && w.Ended > 0 && len(w.Digests) == 0 && len(w.Fails) == 0 && len(w.Slots) == 0 &&
		len(w.Good) == 0 && len(w.Values) == 0 && len(w.Pending) == 0 && len(w.Olds) == 0 && len(w.Timers) == 0 && len(w.Related) == 0
}

// tombstoneBus returns a bus on store whose handlers count creations and
// deletions into runs.
func tombstoneBus(t *testing.T, store Store, ids bool, sink StatusSink, runs map[string]int) *Bus {
	t.Helper()
	opts := &Options{Store: store, Sink: sink}
	if ids {
		opts.Incarnation = uidOf
	}
	b := newBus(t, opts)
	must(t, b.Handle("create", func(_ context.Context, ev *Event) (Status, error) {
		runs["create "+uidOf(ev.New)]++
		return Active(""), nil
	}, On{Types: []EventType{Create}}))
	must(t, b.Handle("cleanup", func(_ context.Context, ev *Event) (Status, error) {
		runs["delete "+uidOf(ev.Old)]++
		return Status{}, nil
	}, On{Types: []EventType{Delete}}))
	return b
}

// TestDeletionSeenAgainByANewProcess: a deletion that a new process (a new
// bus on the same store) observes again runs no delete handler (rule 14,
// defect 2 of issue 32: the memory of finished deletions was in-process
// only), with or without incarnation IDs, in memory and on disk; a state
// observed afterwards starts a new incarnation, whose record replaces the
// tombstone.
func TestDeletionSeenAgainByANewProcess(t *testing.T) {
	for _, ids := range []bool{false, true} {
		for _, onDisk := range []bool{false, true} {
			t.Run(fmt.Sprintf("ids=%v,disk=%v", ids, onDisk), func(t *testing.T) {
				var store Store = NewMemoryStore()
				if onDisk {
					fs, err := NewFileStore(t.TempDir())
					must(t, err)
					store = fs
				}
				ctx := t.Context()
				runs := map[string]int{}
				first := tombstoneBus(t, store, ids, nil, runs)
				must(t, first.Dispatch(ctx, podKey, withUID("u1", map[string]any{"spec": "x"})))
				must(t, first.DispatchDelete(ctx, podKey, withUID("u1", map[string]any{"spec": "x"})))
				data, err := store.Load(ctx, podKey)
				must(t, err)
				if !isTombstone(data) {
					t.Fatalf("after the deletion the store holds %s, want a tombstone", data)
				}

				second := tombstoneBus(t, store, ids, nil, runs)
				must(t, second.DispatchDelete(ctx, podKey, withUID("u1", map[string]any{"spec": "x"})))
				must(t, second.DispatchDelete(ctx, podKey, withUID("u1", map[string]any{"spec": "x"})))
				equal(t, map[string]int{"create u1": 1, "delete u1": 1}, runs, "handler runs after the deletion was seen again")

				must(t, second.Dispatch(ctx, podKey, withUID("u2", map[string]any{"spec": "x"})))
				equal(t, 1, runs["create u2"], "the create handler of the next incarnation")
				data, err = store.Load(ctx, podKey)
				must(t, err)
				if isTombstone(data) || !strings.Contains(string(data), `"create"`) {
					t.Errorf("after a new incarnation the store holds %s, want its record", data)
				}
			})
		}
	}
}

// TestRepeatDeletionAfterACrashReachesTheSink: a deletion finished by an
// earlier process whose DeleteSink may not have heard of it (a crash
// between the record and the finalizer) is handed to the sink once by the
// process that sees it again, and its handlers do not run.
func TestRepeatDeletionAfterACrashReachesTheSink(t *testing.T) {
	store := NewMemoryStore()
	ctx := t.Context()
	runs := map[string]int{}
	first := tombstoneBus(t, store, true, nil, runs) // no sink: as if it crashed before telling it
	must(t, first.Dispatch(ctx, podKey, withUID("u1", nil)))
	must(t, first.DispatchDelete(ctx, podKey, withUID("u1", nil)))

	sink := &deleteSink{}
	second := tombstoneBus(t, store, true, sink, runs)
	must(t, second.DispatchDelete(ctx, podKey, withUID("u1", nil)))
	must(t, second.DispatchDelete(ctx, podKey, withUID("u1", nil)))
	equal(t, 1, runs["delete u1"], "delete handler runs")
	equal(t, 1, sink.deleted, "deletions handed to the sink")
}

// TestRepeatDeletionSinkOwedSurvivesForgetting: the sink call owed for
// an earlier process's finished deletion is kept while the key is
// forgotten in between (a deletion of another incarnation dropped first),
// and only a repeat of the tombstone's own incarnation makes it: the
// dropped deletion of another incarnation does not.
func TestRepeatDeletionSinkOwedSurvivesForgetting(t *testing.T) {
	store := NewMemoryStore()
	ctx := t.Context()
	runs := map[string]int{}
	first := tombstoneBus(t, store, true, nil, runs) // no sink: as if it crashed before telling it
	must(t, first.Dispatch(ctx, podKey, withUID("u1", nil)))
	must(t, first.DispatchDelete(ctx, podKey, withUID("u1", nil)))

	sink := &deleteSink{}
	second := tombstoneBus(t, store, true, sink, runs)
	must(t, second.DispatchDelete(ctx, podKey, withUID("u0", nil))) // another incarnation's, stale: dropped
	equal(t, 0, sink.deleted, "deletions handed to the sink after another incarnation's")
	must(t, second.DispatchDelete(ctx, podKey, withUID("u1", nil)))
	must(t, second.DispatchDelete(ctx, podKey, withUID("u1", nil)))
	equal(t, 1, runs["delete u1"], "delete handler runs")
	equal(t, 0, runs["delete u0"], "delete handler runs for the stale incarnation")
	equal(t, 1, sink.deleted, "deletions handed to the sink")
}

// TestExpiredTombstone: a tombstone older than stored.TombstoneTTL is no record:
// Run's start deletes it, and a deletion observed then is a deletion the
// bus knows nothing of (its handlers run, with no Old but the state given).
func TestExpiredTombstone(t *testing.T) {
	store := NewMemoryStore()
	ctx := t.Context()
	old := newRecord(0)
	old.Inc = "u1"
	old.SetEndedAt(time.Now().Add(-stored.TombstoneTTL - time.Minute).UnixMilli())
	data, err := old.encode(nil)
	must(t, err)
	must(t, store.Save(ctx, podKey, data))
	fresh := newRecord(0)
	fresh.Inc = "u1"
	fresh.SetEndedAt(time.Now().Add(-time.Minute).UnixMilli())
	recent, err := fresh.encode(nil)
	must(t, err)
	other := Key{Kind: "Pod", Namespace: "default", Name: "recent"}
	must(t, store.Save(ctx, other, recent))

	runs := map[string]int{}
	b := tombstoneBus(t, store, true, nil, runs)
	stop := run(t, b)
	must(t, b.Wait(ctx))
	if data, _ := store.Load(ctx, podKey); data != nil {
		t.Errorf("an expired tombstone stayed after Run started: %s", data)
	}
	if data, _ := store.Load(ctx, other); !isTombstone(data) {
		t.Errorf("a tombstone of a minute ago is %s after Run started, want it kept", data)
	}
	must(t, b.DispatchDelete(ctx, other, withUID("u1", nil)))
	equal(t, 0, runs["delete u1"], "a deletion finished a minute ago, seen again")
	must(t, stop())
}
