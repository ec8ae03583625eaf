package opbus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/opbus/opbus/internal/timegrid"
)

// stores runs f with a fresh in-memory store and a fresh file store; each
// constructor returns the same store every time it is called, as a restart
// finds it.
func stores(t *testing.T, f func(t *testing.T, store *countedStore)) {
	t.Run("memory", func(t *testing.T) { f(t, &countedStore{Store: NewMemoryStore()}) })
	t.Run("file", func(t *testing.T) {
		fs, err := NewFileStore(t.TempDir())
		must(t, err)
		f(t, &countedStore{Store: fs})
	})
}

// countedStore counts the record writes made through it.
type countedStore struct {
	Store
	mu    sync.Mutex
	saves int
}

func (s *countedStore) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	s.saves++
	s.mu.Unlock()
	return s.Store.Save(ctx, key, data)
}

func (s *countedStore) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.saves
}

// ticker records when a handler ran, in seconds since start, and whether
// each run was due to its schedule.
type ticker struct {
	mu    sync.Mutex
	start time.Time
	at    []float64
	due   []bool
}

func (k *ticker) note(ev *Event) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.at = append(k.at, time.Since(k.start).Seconds())
	k.due = append(k.due, ev.Due)
}

func (k *ticker) runs() []float64 {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.at)
}

func (k *ticker) dues() []bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.due)
}

func sameRuns(got, want []float64) bool {
	return slices.EqualFunc(got, want, func(a, b float64) bool { return a-b < 0.05 && b-a < 0.05 })
}

// TestTimerRunsWhenDue: a periodic handler runs on its grid even if
// nothing changes, writes nothing for a run whose result is unchanged,
// and a change runs it at once without moving the grid.
func TestTimerRunsWhenDue(t *testing.T) {
	stores(t, func(t *testing.T, store *countedStore) {
		synctest.Test(t, func(t *testing.T) {
			k := &ticker{start: time.Now()}
			b := newBus(t, &Options{Store: store})
			must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
				k.note(ev)
				return Active("ok"), nil
			}, On{Fields: []string{"spec"}, Every: 10 * time.Second}))
			stop := run(t, b)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
			synctest.Wait()
			saves := store.count()
			time.Sleep(35 * time.Second)
			synctest.Wait()
			if got, want := k.runs(), []float64{0, 10, 20, 30}; !sameRuns(got, want) {
				t.Fatalf("runs at %v s, want %v", got, want)
			}
			if got, want := k.dues(), []bool{false, true, true, true}; !slices.Equal(got, want) {
				t.Errorf("Event.Due = %v, want %v", got, want)
			}
			if n := store.count() - saves; n != 0 {
				t.Errorf("%d record writes for 3 due runs with unchanged results, want 0", n)
			}
			must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 2})) // at 35
			time.Sleep(10 * time.Second)
			synctest.Wait()
			if got, want := k.runs(), []float64{0, 10, 20, 30, 35, 40}; !sameRuns(got, want) {
				t.Errorf("runs at %v s, want %v (a change runs at once; the grid stays)", got, want)
			}
			must(t, stop())
		})
	})
}

// TestTimerAcrossRestart: a restart keeps the grid. Due times missed while
// no bus ran collapse into one run at the first pass (no burst); runs the
// store knows of are not repeated, and the grid is not restarted (no
// reset).
func TestTimerAcrossRestart(t *testing.T) {
	for _, tt := range []struct {
		name     string
		changing bool    // each run returns a new status, so each run writes the record
		down, up float64 // the first bus stops at down, the second starts at up
		want     []float64
	}{
		{"unchanged results, long downtime", false, 25, 65, []float64{0, 10, 20, 65, 70, 80}},
		{"unchanged results, short downtime", false, 25, 27, []float64{0, 10, 20, 27, 30, 40, 50, 60, 70, 80}},
		{"written results, short downtime", true, 25, 27, []float64{0, 10, 20, 30, 40, 50, 60, 70, 80}},
		{"written results, long downtime", true, 25, 65, []float64{0, 10, 20, 65, 70, 80}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stores(t, func(t *testing.T, store *countedStore) {
				synctest.Test(t, func(t *testing.T) {
					k := &ticker{start: time.Now()}
					n := 0
					handle := func(ctx context.Context, ev *Event) (Status, error) {
						k.note(ev)
						n++
						if tt.changing {
							return Active(fmt.Sprintf("run %d", n)), nil
						}
						return Active("ok"), nil
					}
					start := func() func() error {
						b := newBus(t, &Options{Store: store})
						must(t, b.Handle("poll", handle, On{Every: 10 * time.Second}))
						stop := run(t, b)
						must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
						return stop
					}
					stop := start()
					time.Sleep(time.Duration(tt.down * float64(time.Second)))
					must(t, stop())
					time.Sleep(time.Duration((tt.up - tt.down) * float64(time.Second)))
					stop = start()
					time.Sleep(time.Duration((80.5 - tt.up) * float64(time.Second)))
					synctest.Wait()
					must(t, stop())
					if got := k.runs(); !sameRuns(got, tt.want) {
						t.Errorf("runs at %v s, want %v", got, tt.want)
					}
				})
			})
		})
	}
}

// TestTimerFailuresBackoff: a due run that fails follows the failure rules
// (error slot, backoff, attempts), and the grid resumes after the retry
// succeeds; no extra run is made for the due times the retries covered.
func TestTimerFailuresBackoff(t *testing.T) {
	stores(t, func(t *testing.T, store *countedStore) {
		synctest.Test(t, func(t *testing.T) {
			k := &ticker{start: time.Now()}
			var attempts []int
			fail := map[int]bool{1: true, 2: true} // the due run at 10 and its first retry
			b := newBus(t, &Options{Store: store, Backoff: Backoff{Initial: 4 * time.Second, Factor: 2, Jitter: 0.001}})
			n := 0
			must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
				k.note(ev)
				attempts = append(attempts, ev.Attempt)
				defer func() { n++ }()
				if fail[n] {
					return Status{}, errors.New("outside system down")
				}
				return Active("ok"), nil
			}, On{Every: 10 * time.Second}))
			stop := run(t, b)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
			time.Sleep(11 * time.Second)
			synctest.Wait()
			_, slots, _ := b.Status(t.Context(), podKey)
			if got := slots["poll"]; got.Level != LevelError {
				t.Errorf("slot after a failed due run = %v, want an error", got)
			}
			time.Sleep(30 * time.Second)
			synctest.Wait()
			must(t, stop())
			// 10 fails, retried after 4 s (14), which fails, and after
			// 8 s (22), which succeeds and covers the due time at 20;
			// then 30, 40.
			if got, want := k.runs(), []float64{0, 10, 14, 22, 30, 40}; !sameRuns(got, want) {
				t.Errorf("runs at %v s, want %v", got, want)
			}
			if want := []int{1, 1, 2, 3, 1, 1}; !slices.Equal(attempts, want) {
				t.Errorf("attempts = %v, want %v", attempts, want)
			}
			if got := b.Stats().Failed; got != 2 {
				t.Errorf("Stats.Failed = %d, want 2", got)
			}
			_, slots, _ = b.Status(t.Context(), podKey)
			if got := slots["poll"]; got != Active("ok") {
				t.Errorf("slot after the retry succeeded = %v, want active ok", got)
			}
		})
	})
}

// TestTimerStopsAtDeletion: a schedule ends with its incarnation; the next
// incarnation's starts at its own first run.
func TestTimerStopsAtDeletion(t *testing.T) {
	stores(t, func(t *testing.T, store *countedStore) {
		synctest.Test(t, func(t *testing.T) {
			k := &ticker{start: time.Now()}
			b := newBus(t, &Options{Store: store, Incarnation: func(obj map[string]any) string { s, _ := obj["uid"].(string); return s }})
			must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
				k.note(ev)
				return Active("ok"), nil
			}, On{Every: 10 * time.Second}))
			stop := run(t, b)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"uid": "u1"}))
			time.Sleep(15 * time.Second)
			must(t, b.ObserveDelete(t.Context(), podKey, map[string]any{"uid": "u1"}))
			time.Sleep(30 * time.Second)
			synctest.Wait()
			if got, want := k.runs(), []float64{0, 10}; !sameRuns(got, want) {
				t.Fatalf("runs at %v s, want %v: none after the deletion at 15", got, want)
			}
			// A new incarnation (another uid, no deletion observed) at 47.
			time.Sleep(2 * time.Second)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"uid": "u2"}))
			time.Sleep(5 * time.Second)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"uid": "u3"}))
			time.Sleep(12 * time.Second)
			synctest.Wait()
			must(t, stop())
			if got, want := k.runs(), []float64{0, 10, 47, 52, 62}; !sameRuns(got, want) {
				t.Errorf("runs at %v s, want %v: u2 at 47 ended at 52 (no run at 57); u3's grid starts at 52", got, want)
			}
		})
	})
}

// TestAgainIsNotAFailure: a handler that polls with Event.Again shows its
// own status, counts no failure, runs again after d even if nothing
// changed, also after a success, without a record write per poll; a run
// that does not ask again ends the polling.
func TestAgainIsNotAFailure(t *testing.T) {
	stores(t, func(t *testing.T, store *countedStore) {
		synctest.Test(t, func(t *testing.T) {
			k := &ticker{start: time.Now()}
			n := 0
			b := newBus(t, &Options{Store: store})
			must(t, b.Handle("db", func(ctx context.Context, ev *Event) (Status, error) {
				k.note(ev)
				n++
				switch {
				case n <= 3:
					ev.Again(30 * time.Second)
					return Waiting("database not ready"), nil
				case n == 4:
					ev.Again(time.Minute) // ready; keep an eye on it for a while
					return Active("ready"), nil
				}
				return Active("ready"), nil
			}, On{Fields: []string{"spec"}}))
			stop := run(t, b)
			must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
			synctest.Wait()
			_, slots, _ := b.Status(t.Context(), podKey)
			if got := slots["db"]; got != Waiting("database not ready") {
				t.Errorf("slot = %v, want the handler's own waiting status", got)
			}
			saves := store.count()
			time.Sleep(61 * time.Second)
			synctest.Wait()
			if n := store.count() - saves; n != 0 {
				t.Errorf("%d record writes for 2 polls with unchanged results, want 0", n)
			}
			time.Sleep(5 * time.Minute)
			synctest.Wait()
			must(t, stop())
			if got, want := k.runs(), []float64{0, 30, 60, 90, 150}; !sameRuns(got, want) {
				t.Errorf("runs at %v s, want %v", got, want)
			}
			if s := b.Stats(); s.Failed != 0 {
				t.Errorf("Stats.Failed = %d, want 0: Again is not a failure", s.Failed)
			}
			_, slots, _ = b.Status(t.Context(), podKey)
			if got := slots["db"]; got != Active("ready") {
				t.Errorf("slot = %v, want active ready", got)
			}
		})
	})
}

// TestDueOption: with Options.Due, a process that runs one pass (a Juju
// hook) runs a schedule when Due says so, whatever the clock.
func TestDueOption(t *testing.T) {
	store := NewMemoryStore()
	ctx := t.Context()
	runs := map[string]int{}
	hook := func(updateStatus bool) {
		b := newBus(t, &Options{Store: store, Due: func(key Key, handler string, again bool) bool { return again || updateStatus }})
		n := 0
		must(t, b.Handle("periodic", func(ctx context.Context, ev *Event) (Status, error) {
			runs["periodic"]++
			return Active(""), nil
		}, On{Every: time.Hour}))
		must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
			runs["poll"]++
			n++
			if runs["poll"] < 3 {
				ev.Again(time.Hour)
				return Waiting("not yet"), nil
			}
			return Active("done"), nil
		}, On{}))
		must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	}
	hook(false) // both run: create
	hook(false) // poll runs again (Again), periodic does not
	hook(true)  // update-status: both
	hook(false) // nothing: poll is done, periodic waits for update-status
	if runs["periodic"] != 2 || runs["poll"] != 3 {
		t.Errorf("runs = %v, want periodic 2 and poll 3", runs)
	}
}

// TestEveryChecked: Handle names an On.Every that cannot work.
func TestEveryChecked(t *testing.T) {
	for _, tt := range []struct {
		on   On
		want string
	}{
		{On{Every: -time.Second}, `opbus: handler "h": On.Every is -1s: expected a positive period, or 0 for none`},
		{On{Every: time.Microsecond}, `opbus: handler "h": On.Every is 1µs: expected whole milliseconds (schedules are stored in milliseconds)`},
		{On{Every: 250 * 365 * 24 * time.Hour}, `opbus: handler "h": On.Every is 2190000h0m0s: expected at most 876000h0m0s (100 years: schedules count time in Unix nanoseconds, which end in 2262)`},
		{On{Every: time.Second, Types: []EventType{Delete}}, `opbus: handler "h": On.Every is set but Types has neither Create nor Update: a periodic run is an update of the object`},
	} {
		b := newBus(t, nil)
		err := b.Handle("h", func(context.Context, *Event) (Status, error) { return Status{}, nil }, tt.on)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Handle(%+v) = %v, want %s", tt.on, err, tt.want)
		}
	}
}

// TestTimerPeriodBounded: On.Every of exactly the bound is accepted, and
// one that cannot be represented once added to today's time is an error
// (TestEveryChecked); Again with a d past the end of Unix nanoseconds
// polls at the bound instead of wrapping into the past: the handler runs
// once, not again and again.
func TestTimerPeriodBounded(t *testing.T) {
	var logs bytes.Buffer // read once Run has returned
	b := newBus(t, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	var runs atomic.Int64
	must(t, b.Handle("every", func(context.Context, *Event) (Status, error) {
		return Active(""), nil
	}, On{Every: maxPeriod}))
	must(t, b.Handle("again", func(ctx context.Context, ev *Event) (Status, error) {
		runs.Add(1)
		ev.Again(math.MaxInt64) // about 292 years
		return Waiting("later"), nil
	}, On{}))
	stop := run(t, b)
	must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
	must(t, b.Wait(t.Context()))
	time.Sleep(200 * time.Millisecond) // a wrapped due time is due at once, again and again
	must(t, stop())
	if n := runs.Load(); n != 1 {
		t.Errorf("the handler that asked Again(292 years) ran %d times, want 1", n)
	}
	if want := `msg="opbus: Event.Again past the bound of a period: taken as the bound" key="Pod default/web" handler=again again=2562047h47m16.854775807s bound=876000h0m0s`; !strings.Contains(logs.String(), want) {
		t.Errorf("log:\n%s\nwant a warning with %s", logs.String(), want)
	}
}

// TestScheduleSaturates: a schedule whose next due time lies past the end
// of Unix nanoseconds (a period at the bound from an anchor after 2162, or
// a stored period beyond it) is due at the end of time, never in the past.
func TestScheduleSaturates(t *testing.T) {
	late := time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, s := range []*schedule{
		{Anchor: timegrid.StartAt(late), Every: maxPeriod},
		{Anchor: timegrid.StartAt(time.Now()), Every: math.MaxInt64},
		{Anchor: math.MinInt64 + 1, Every: math.MaxInt64},
	} {
		start := time.Unix(0, s.Anchor)
		if n := s.Next(); !n.After(start) {
			t.Errorf("schedule %+v: next = %v, want after its anchor %v", *s, n, start)
		}
		now := time.Now()
		s.Tried(now)
		if n := s.Next(); !n.After(now) {
			t.Errorf("schedule %+v: next after a failed run at %v = %v, want after it", *s, now, n)
		}
		s.Ran(now)
		if n := s.Next(); !n.After(now) {
			t.Errorf("schedule %+v: next after a run at %v = %v, want after it", *s, now, n)
		}
	}
}

// TestTimerArmedWhenRunStarts: a schedule started by a pass made before
// Run (Dispatch, or Wait dispatching itself) runs once Run starts.
func TestTimerArmedWhenRunStarts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		k := &ticker{start: time.Now()}
		b := newBus(t, nil)
		must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
			k.note(ev)
			return Active("ok"), nil
		}, On{Every: 10 * time.Second}))
		must(t, b.Dispatch(t.Context(), podKey, map[string]any{"spec": 1}))
		time.Sleep(time.Second)
		stop := run(t, b)
		time.Sleep(24 * time.Second)
		synctest.Wait()
		must(t, stop())
		if got, want := k.runs(), []float64{0, 10, 20}; !sameRuns(got, want) {
			t.Errorf("runs at %v s, want %v", got, want)
		}
	})
}

// TestRemovedHandlerScheduleForgotten: the schedule of a handler that is
// no longer registered is dropped with its digest, so no timer fires for
// it.
func TestRemovedHandlerScheduleForgotten(t *testing.T) {
	store := NewMemoryStore()
	ctx := t.Context()
	b := newBus(t, &Options{Store: store})
	must(t, b.Handle("gone", func(ctx context.Context, ev *Event) (Status, error) { return Active(""), nil }, On{Every: time.Hour}))
	must(t, b.Handle("kept", func(ctx context.Context, ev *Event) (Status, error) { return Active(""), nil }, On{}))
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1}))
	data, _ := store.Load(ctx, podKey)
	if rec, err := decodeRecord(podKey, data, map[string]int{"gone": 0, "kept": 1}); err != nil || rec.schedOf("gone") == nil {
		t.Fatalf("record %s: %v; want the schedule of gone", data, err)
	}
	rec, err := decodeRecord(podKey, data, map[string]int{"kept": 0})
	if err != nil || len(rec.Timers()) != 0 {
		t.Errorf("read without handler gone: schedules %v, err %v; want none", rec.Timers(), err)
	}
}

// TestDueTimeDuringARunIsNotLost: a due time that passes while a run is
// under way is not covered by that run, which began before it and so
// could not see it: it runs once right after (as a ticker's next tick is
// waiting for a slow receiver), for Every and for an Again that the run
// asked before its next due time. A schedule's run covers the due times up
// to its start, not its end. (The Again run at 25 is more than a tenth of
// its period late, so it restarts its grid: rule 39.)
func TestDueTimeDuringARunIsNotLost(t *testing.T) {
	for _, again := range []bool{false, true} {
		t.Run(fmt.Sprintf("again=%v", again), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				k := &ticker{start: time.Now()}
				b := newBus(t, nil)
				on := On{Fields: []string{"spec"}}
				if !again {
					on.Every = 10 * time.Second
				}
				must(t, b.Handle("poll", func(ctx context.Context, ev *Event) (Status, error) {
					k.note(ev)
					if again {
						ev.Again(10 * time.Second)
					}
					if len(k.runs()) == 2 {
						time.Sleep(15 * time.Second) // the run due at 10 ends at 25, past 20
					}
					return Active("ok"), nil
				}, on))
				stop := run(t, b)
				must(t, b.Observe(t.Context(), podKey, map[string]any{"spec": 1}))
				time.Sleep(41 * time.Second)
				synctest.Wait()
				must(t, stop())
				want := []float64{0, 10, 25, 30, 40}
				if again {
					want = []float64{0, 10, 25, 35}
				}
				if got := k.runs(); !sameRuns(got, want) {
					t.Errorf("runs at %v s, want %v (the time due at 20 runs when the run that began at 10 ends)", got, want)
				}
			})
		})
	}
}
