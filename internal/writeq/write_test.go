package writeq

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// fakeStore records the calls Make makes, in order.
type fakeStore struct {
	calls       []string
	combined    bool   // SaveWithStatus can write both as one
	dropped     bool   // Dropped reports true from the start
	dropAfter   int    // Dropped reports true once this many calls were made (0: never)
	failPut     string // PutStatus of this status fails
	saveErr     error
	beforeFails []string
	held        bool // the key's stripe is held
}

func (s *fakeStore) Dropped(string) bool {
	return s.dropped || (s.dropAfter > 0 && len(s.calls) >= s.dropAfter)
}

// Stripe returns a lock that notes whether Make holds it: the record is
// saved under the key's stripe (invariant 6).
func (s *fakeStore) Stripe(string) sync.Locker { return heldLock{&s.held} }

// heldLock notes whether it is held.
type heldLock struct{ held *bool }

func (l heldLock) Lock()   { *l.held = true }
func (l heldLock) Unlock() { *l.held = false }

func (s *fakeStore) Save(_ context.Context, key string, rec []byte) error {
	if !s.held {
		s.calls = append(s.calls, "save outside the stripe")
	}
	s.calls = append(s.calls, "save "+string(rec))
	return s.saveErr
}

func (s *fakeStore) SaveWithStatus(_ context.Context, key string, rec []byte, st string) (bool, error) {
	if !s.combined {
		return false, nil
	}
	if !s.held {
		s.calls = append(s.calls, "save outside the stripe")
	}
	s.calls = append(s.calls, "save "+string(rec)+"+"+st)
	return true, s.saveErr
}

func (s *fakeStore) PutStatus(_ context.Context, key, st string) error {
	s.calls = append(s.calls, "put "+st)
	if st == s.failPut {
		return errors.New("refused")
	}
	return nil
}

func (s *fakeStore) BeforeFailed(key, st string, err error) {
	s.beforeFails = append(s.beforeFails, st)
}

// Make writes the queued statuses first, in order, then the record and
// the write's own status: as one write when the store can (invariant 7).
func TestMakeWritesInOrder(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store fakeStore
		want  []string
	}{
		{"separate", fakeStore{}, []string{"put s1", "put s2", "save r", "put s3"}},
		{"together", fakeStore{combined: true}, []string{"put s1", "put s2", "save r+s3"}},
		{"queued status refused", fakeStore{failPut: "s1"}, []string{"put s1", "save r", "put s3"}},
		{"dropped before the status", fakeStore{dropAfter: 3}, []string{"put s1", "put s2", "save r"}},
		{"dropped at once", fakeStore{dropped: true}, []string{"save r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.store
			w := Write[string]{Record: []byte("r"), Put: true, Status: "s3", Before: []string{"s1", "s2"}}
			Make(context.Background(), Store[string, string](&st), "k", &w)
			got := st.calls
			if dropped := st.dropped || st.dropAfter > 0; dropped != w.Skipped {
				t.Errorf("Skipped = %v; want %v: a dropped key's status is not written (invariant 6)", w.Skipped, dropped)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("calls = %q; want %q (invariant 7)", got, tc.want)
			}
			if w.Together != st.combined {
				t.Errorf("Together = %v; want %v", w.Together, st.combined)
			}
			if tc.name == "queued status refused" && !slices.Equal(st.beforeFails, []string{"s1"}) {
				t.Errorf("BeforeFailed got %q; want the refused s1", st.beforeFails)
			}
		})
	}
}

// Make reports the failures of a write in its outcome: the record's (or
// both's, together) in SaveErr, the status's alone in PutErr.
func TestMakeReportsFailures(t *testing.T) {
	boom := errors.New("boom")
	st := fakeStore{saveErr: boom, failPut: "s"}
	w := Write[string]{Record: []byte("r"), Put: true, Status: "s"}
	Make(context.Background(), Store[string, string](&st), "k", &w)
	if !errors.Is(w.SaveErr, boom) || w.PutErr == nil || w.Together || w.Skipped {
		t.Fatalf("outcome = %+v; want SaveErr boom and PutErr set", w)
	}
	st = fakeStore{saveErr: boom, combined: true}
	w = Write[string]{Record: []byte("r"), Put: true, Status: "s"}
	Make(context.Background(), Store[string, string](&st), "k", &w)
	if !errors.Is(w.SaveErr, boom) || !w.Together || w.PutErr != nil {
		t.Fatalf("outcome = %+v; want a failed combined write", w)
	}
	st = fakeStore{}
	w = Write[string]{Put: true, Status: "s"} // the record is saved already
	Make(context.Background(), Store[string, string](&st), "k", &w)
	if !slices.Equal(st.calls, []string{"put s"}) {
		t.Fatalf("calls = %q; want the status alone", st.calls)
	}
}

// StatusLost reports a status that did not reach the sink: with the
// record, which failed; dropped before it went; or refused.
func TestStatusLost(t *testing.T) {
	boom := errors.New("boom")
	for _, tc := range []struct {
		name string
		w    Write[string]
		want bool
	}{
		{"no status", Write[string]{SaveErr: boom}, false},
		{"written", Write[string]{Put: true}, false},
		{"together, failed", Write[string]{Put: true, Together: true, SaveErr: boom}, true},
		{"alone, record failed", Write[string]{Put: true, SaveErr: boom}, false},
		{"skipped", Write[string]{Put: true, Skipped: true}, true},
		{"refused", Write[string]{Put: true, PutErr: boom}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.w.StatusLost(); got != tc.want {
				t.Errorf("StatusLost() = %v, want %v", got, tc.want)
			}
		})
	}
}

// Carry leaves out of Before the last queued status if it is the write's
// own: consecutive equal statuses go once (invariant 3).
func TestCarry(t *testing.T) {
	same := func(a, b string) bool { return a == b }
	for _, tc := range []struct {
		before []string
		want   []string
	}{
		{nil, nil},
		{[]string{"busy"}, []string{"busy"}},
		{[]string{"busy", "ready"}, []string{"busy"}},
		{[]string{"ready", "busy"}, []string{"ready", "busy"}},
	} {
		var w Write[string]
		w.Carry("ready", tc.before, same)
		if !w.Put || w.Status != "ready" || !slices.Equal(w.Before, tc.want) {
			t.Errorf("Carry(ready, %q) = %+v, want Put, Status ready and Before %q", tc.before, w, tc.want)
		}
	}
}
