package opbus

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// pairedStore is a MemoryStore that writes the statuses of its own sink
// together with records (a StatusStore), counting what went which way, and
// failing its next combined writes when told to.
type pairedStore struct {
	MemoryStore
	sink *recordingSink

	mu       sync.Mutex
	saves    int // records written alone
	together int // records written with a status
	fail     int // combined writes left to fail
	decline  bool
}

var _ StatusStore = (*pairedStore)(nil)

func (s *pairedStore) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	s.saves++
	s.mu.Unlock()
	return s.MemoryStore.Save(ctx, key, data)
}

func (s *pairedStore) SaveStatus(ctx context.Context, sink StatusSink, key Key, data []byte, obj map[string]any, overall Status, slots Slots) (bool, error) {
	s.mu.Lock()
	if sink != StatusSink(s.sink) || s.decline {
		s.mu.Unlock()
		return false, nil
	}
	if s.fail > 0 {
		s.fail--
		s.mu.Unlock()
		return true, errors.New("store down")
	}
	s.together++
	s.mu.Unlock()
	if err := s.MemoryStore.Save(ctx, key, data); err != nil {
		return true, err
	}
	return true, s.sink.PutStatus(ctx, key, obj, overall, slots)
}

func (s *pairedStore) counts() (saves, together int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves, s.together
}

func (s *recordingSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.calls)
}

// A pass that changed its record and its status writes both in one call of
// a StatusStore paired with the sink; a pass whose status did not change
// saves the record alone (rule 22b).
func TestRecordAndStatusTogether(t *testing.T) {
	sink := &recordingSink{}
	store := &pairedStore{sink: sink}
	b := newBus(t, &Options{Store: store, Sink: sink})
	must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
		img, _ := Get[string](ev.New, "spec.image")
		if img == "v3" {
			return Active("v2"), nil // the same status as v2's
		}
		return Active(img), nil
	}, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	ctx := context.Background()
	for _, v := range []string{"v1", "v2", "v3"} {
		must(t, b.Observe(ctx, podKey, doc("web", v)))
		must(t, b.Wait(ctx))
	}
	must(t, stop())

	saves, together := store.counts()
	equal(t, 2, together, "v1 and v2 changed the status: one write each")
	equal(t, 1, saves, "v3 changed only the record")
	equal(t, 2, sink.count(), "the statuses reached the sink through the store")
	sink.mu.Lock()
	equal(t, "v2", sink.calls[1].overall.Message)
	sink.mu.Unlock()
	again := newBus(t, &Options{Store: store})
	r := &recorder{}
	must(t, again.Handle("image", r.handle, On{Fields: []string{"spec.image"}}))
	must(t, again.Observe(ctx, podKey, doc("web", "v3")))
	must(t, again.Wait(ctx))
	equal(t, 0, r.count(), "the records written together hold the handled value")
}

// A store that declines, or a sink that is not the store's own, leaves the
// bus to Save and PutStatus one after the other, as without a StatusStore.
func TestRecordAndStatusDeclined(t *testing.T) {
	for _, tc := range []struct {
		name    string
		decline bool
		other   bool
	}{{"declined", true, false}, {"another sink", false, true}} {
		t.Run(tc.name, func(t *testing.T) {
			own, other := &recordingSink{}, &recordingSink{}
			store := &pairedStore{sink: own, decline: tc.decline}
			sink := own
			if tc.other {
				sink = other
			}
			b := newBus(t, &Options{Store: store, Sink: sink})
			must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
				img, _ := Get[string](ev.New, "spec.image")
				return Active(img), nil
			}, On{Fields: []string{"spec.image"}}))
			ctx := context.Background()
			must(t, b.Observe(ctx, podKey, doc("web", "v1")))
			must(t, b.Wait(ctx))
			saves, together := store.counts()
			equal(t, 0, together)
			equal(t, 1, saves)
			equal(t, 1, sink.count(), "the status went to the bus's sink")
		})
	}
}

// A combined write that fails wrote neither: the bus retries both, together,
// without running the handler again, and reports the failure naming both.
func TestRecordAndStatusFailTogether(t *testing.T) {
	sink := &recordingSink{}
	store := &pairedStore{sink: sink, fail: 2}
	b := newBus(t, &Options{Store: store, Sink: sink, Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 20 * time.Millisecond}})
	r := &recorder{}
	must(t, b.Handle("image", r.handle, On{Fields: []string{"spec.image"}}))
	stop := run(t, b)
	ctx := context.Background()
	must(t, b.Observe(ctx, podKey, doc("web", "v1")))
	must(t, b.Settle(ctx))
	must(t, stop())

	equal(t, 1, r.count(), "a failed write re-runs no handler")
	saves, together := store.counts()
	equal(t, 1, together, "the retry wrote both together")
	equal(t, 0, saves, "no write of the record alone")
	equal(t, 1, sink.count(), "no status published outside the combined write")
	again := newBus(t, &Options{Store: store})
	r2 := &recorder{}
	must(t, again.Handle("image", r2.handle, On{Fields: []string{"spec.image"}}))
	must(t, again.Observe(ctx, podKey, doc("web", "v1")))
	must(t, again.Wait(ctx))
	equal(t, 0, r2.count())
}
