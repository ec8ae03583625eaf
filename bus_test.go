package opbus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestStatusOnlyChangeFires is the kopf bug: a change of status alone must
// fire both a handler on status.containerStatuses and a whole-object update
// handler, while per-write noise fires nothing.
func TestStatusOnlyChangeFires(t *testing.T) {
	ctx := t.Context()
	b := newBus(t, &Options{ListKeys: map[string]string{"containerStatuses": "name"}})
	var field, whole recorder
	must(t, b.Handle("crash-watch", field.handle, On{Types: []EventType{Update}, Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}}))
	must(t, b.Handle("any-update", whole.handle, On{Types: []EventType{Update}}))

	must(t, b.Dispatch(ctx, podKey, pod("1", "running")))
	if field.count() != 0 || whole.count() != 0 {
		t.Fatalf("create fired update handlers: %d, %d", field.count(), whole.count())
	}
	must(t, b.Dispatch(ctx, podKey, pod("2", "running"))) // resourceVersion only
	if field.count() != 0 || whole.count() != 0 {
		t.Fatalf("a resourceVersion bump fired handlers: %d, %d", field.count(), whole.count())
	}
	must(t, b.Dispatch(ctx, podKey, pod("3", "Error")))
	if field.count() != 1 || whole.count() != 1 {
		t.Fatalf("status-only change: field handler ran %d times, whole-object handler %d; want 1 and 1", field.count(), whole.count())
	}
	ev := field.last()
	if ev.Type != Update || ev.Old == nil || ev.New == nil || ev.Attempt != 1 || ev.ID == "" || ev.Handler != "crash-watch" {
		t.Errorf("event = %+v", ev)
	}
	got := ev.Changes.String()
	for _, want := range []string{
		"change status.containerStatuses[name=app].ready: true → false",
		"remove status.containerStatuses[name=app].state.running",
		`add status.containerStatuses[name=app].state.terminated = {"exitCode":1,"reason":"Error"}`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("changes\n%s\nlack %s", got, want)
		}
	}
	if strings.Contains(whole.last().Changes.String(), "resourceVersion") {
		t.Errorf("whole-object changes include ignored noise: %s", whole.last().Changes)
	}
	must(t, b.Dispatch(ctx, podKey, pod("4", "Error")))
	if field.count() != 1 || whole.count() != 1 {
		t.Fatalf("the same value fired again: %d, %d", field.count(), whole.count())
	}
}

func TestRegistrationErrors(t *testing.T) {
	b := newBus(t, nil)
	ok := func(context.Context, *Event) (Status, error) { return Status{}, nil }
	must(t, b.Handle("a", ok, On{}))
	tests := []struct {
		id   string
		on   On
		want string
	}{
		{"a", On{}, `duplicate ID`},
		{"b", On{Fields: []string{"spec..x"}}, "field path spec..x: at offset 5"},
		{"c", On{Types: []EventType{Delete}, Fields: []string{"spec"}}, "can never change on Delete"},
		{"d", On{Types: []EventType{EventType(9)}}, "unknown event type 9"},
		{"e", On{Kinds: []string{""}}, "empty kind"},
		{"f", On{Fields: []string{"metadata.resourceVersion"}}, "is ignored by the bus"},
		{"g", On{Fields: []string{"metadata.managedFields[*].manager"}}, "is ignored by the bus"},
		{"", On{}, "empty ID"},
	}
	for _, tt := range tests {
		err := b.Handle(tt.id, ok, tt.on)
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.HasPrefix(err.Error(), "opbus: ") {
			t.Errorf("Handle(%q, %+v) = %v, want an error saying %q", tt.id, tt.on, err, tt.want)
		}
	}
	if err := b.Collect("a", func(context.Context, Key, map[string]any) Status { return Status{} }); err == nil {
		t.Error("a collector may not take a handler's slot")
	}
	if err := b.Handle("nil", nil, On{}); err == nil {
		t.Error("nil handler: want an error")
	}
	if _, err := New(&Options{Ignore: []string{"a["}}); err == nil || !strings.Contains(err.Error(), "a[") {
		t.Errorf("bad ignored path: got %v", err)
	}
	must(t, b.Dispatch(t.Context(), podKey, pod("1", "running")))
	if err := b.Handle("late", ok, On{}); err == nil || !strings.Contains(err.Error(), "has started") {
		t.Errorf("Handle after start: got %v", err)
	}
	if err := b.Ignore("x"); err == nil {
		t.Error("Ignore after start: want an error")
	}
	if err := b.Dispatch(t.Context(), Key{Kind: "Pod"}, nil); err == nil || !strings.Contains(err.Error(), "needs a kind and a name") {
		t.Errorf("key without a name: got %v", err)
	}
}

// TestSlotsAcrossBuses is the ops bug across processes: handler A Blocked,
// handler B Blocked, A recovers → still Blocked with B's message, also for a
// new Bus on the same store (a new Juju hook process).
func TestSlotsAcrossBuses(t *testing.T) {
	ctx := t.Context()
	store, err := NewFileStore(t.TempDir())
	must(t, err)
	key := Key{Kind: "unit", Name: "gateway/0"}
	build := func() *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("a", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.New["a"] == "bad" {
				return Blocked("a is bad"), nil
			}
			return Active(""), nil
		}, On{Fields: []string{"a"}}))
		must(t, b.Handle("b", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.New["b"] == "bad" {
				return Blocked("b is bad"), nil
			}
			return Active(""), nil
		}, On{Fields: []string{"b"}}))
		return b
	}
	must(t, build().Dispatch(ctx, key, map[string]any{"a": "bad", "b": "bad"}))
	b2 := build()
	must(t, b2.Dispatch(ctx, key, map[string]any{"a": "good", "b": "bad"}))
	st, slots, err := b2.Status(ctx, key)
	must(t, err)
	if st != Blocked("b is bad") {
		t.Fatalf("overall = %v, want blocked: b is bad (slots %v)", st, slots)
	}
	st, _, err = build().Status(ctx, key)
	if err != nil || st != Blocked("b is bad") {
		t.Fatalf("a third bus reads %v, %v", st, err)
	}
}

func TestCollector(t *testing.T) {
	b := newBus(t, nil)
	calls := 0
	must(t, b.Collect("workload", func(ctx context.Context, key Key, obj map[string]any) Status {
		calls++
		if obj["ready"] != true {
			return Waiting("workload not ready")
		}
		return Active("")
	}))
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) { return Maintenance("installing"), nil }, On{Fields: []string{"spec"}}))
	ctx := t.Context()
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1, "ready": false}))
	if st, _, _ := b.Status(ctx, podKey); st != Maintenance("installing") {
		t.Errorf("got %v", st)
	}
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": 1, "ready": true}))
	_, slots, _ := b.Status(ctx, podKey)
	if calls != 2 || slots["workload"] != Active("") {
		t.Errorf("collector calls %d, slots %v", calls, slots)
	}
}

func TestHandlerErrorsAreReturnedByDispatch(t *testing.T) {
	b := newBus(t, nil)
	boom := errors.New("boom")
	must(t, b.Handle("fails", func(context.Context, *Event) (Status, error) { return Status{}, boom }, On{}))
	must(t, b.Handle("panics", func(context.Context, *Event) (Status, error) { panic("kaput") }, On{}))
	var ok recorder
	must(t, b.Handle("ok", ok.handle, On{}))
	err := b.Dispatch(t.Context(), podKey, pod("1", "running"))
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `handler "fails"`) {
		t.Errorf("err = %v", err)
	}
	var pe *PanicError
	if !errors.As(err, &pe) || pe.Value != "kaput" || !strings.Contains(string(pe.Stack), "bus_test.go") {
		t.Errorf("panic not reported with its stack: %v", err)
	}
	if ok.count() != 1 {
		t.Error("a failing handler kept another from running")
	}
	_, slots, _ := b.Status(t.Context(), podKey)
	if slots["fails"] != ErrorStatus("boom") || slots["panics"] != ErrorStatus("panic: kaput") {
		t.Errorf("slots = %v", slots)
	}
}

func TestSubscriptions(t *testing.T) {
	b := newBus(t, nil)
	ok := func(context.Context, *Event) (Status, error) { return Status{}, nil }
	must(t, b.Handle("x", ok, On{Kinds: []string{"unit"}, Fields: []string{"relations.istio-pilot", "config.kind"}}))
	must(t, b.Handle("y", ok, On{Types: []EventType{Delete, Resume}}))
	must(t, b.Collect("c", func(context.Context, Key, map[string]any) Status { return Status{} }))
	must(t, b.AddSlot("machine"))
	if got := fmt.Sprint(b.slotIDs()); got != "[c machine x y]" {
		t.Errorf("SlotIDs() = %s", got)
	}
	subs := b.Subscriptions()
	if len(subs) != 2 || subs[0].ID != "x" || len(subs[0].Fields) != 2 || subs[0].Fields[1].String() != "config.kind" ||
		fmt.Sprint(subs[0].Types) != "[create update]" || fmt.Sprint(subs[1].Types) != "[delete resume]" || subs[1].Fields != nil {
		t.Fatalf("Subscriptions() = %+v", subs)
	}
}

func TestValuesPersist(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	b := newBus(t, &Options{Store: store})
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		ev.SetValue("phase", fmt.Sprint(ev.New["n"]))
		return Status{}, nil
	}, On{}))
	must(t, b.Dispatch(ctx, podKey, map[string]any{"n": 1}))
	if v, ok, err := b.Value(ctx, podKey, "phase"); v != "1" || !ok || err != nil {
		t.Fatalf("Value = %q, %v, %v", v, ok, err)
	}
	b2 := newBus(t, &Options{Store: store})
	if v, ok, err := b2.Value(ctx, podKey, "phase"); v != "1" || !ok || err != nil {
		t.Fatalf("from the store: Value = %q, %v, %v", v, ok, err)
	}
	if _, ok, _ := b2.Value(ctx, podKey, "other"); ok {
		t.Error("an unset value reads as set")
	}
}

// TestCreateOnlyHandlerCostsNothingOnUpdate: a handler for Create alone
// neither runs nor rewrites the record when the object changes.
func TestCreateOnlyHandlerCostsNothingOnUpdate(t *testing.T) {
	ctx := t.Context()
	store := &countingStore{}
	b := newBus(t, &Options{Store: store})
	var h recorder
	must(t, b.Handle("created", h.handle, On{Types: []EventType{Create}}))
	must(t, b.Dispatch(ctx, podKey, map[string]any{"n": 1}))
	saves := store.saves
	for n := 2; n < 5; n++ {
		must(t, b.Dispatch(ctx, podKey, map[string]any{"n": n}))
	}
	if h.count() != 1 || store.saves != saves {
		t.Fatalf("runs %d (want 1), saves after create %d (want 0)", h.count(), store.saves-saves)
	}
}

// TestOptionsChecked: New names the option it cannot use, and a negative
// Jitter turns jitter off.
func TestOptionsChecked(t *testing.T) {
	for _, tt := range []struct {
		opts Options
		want string
	}{
		{Options{Workers: -1}, "Options.Workers is -1"},
		{Options{MaxBacklog: -2}, "Options.MaxBacklog is -2"},
		{Options{ShutdownTimeout: -time.Second}, "Options.ShutdownTimeout is -1s"},
		{Options{Backoff: Backoff{Factor: 0.5}}, "Options.Backoff.Factor is 0.5"},
		{Options{Backoff: Backoff{Jitter: 1.5}}, "Options.Backoff.Jitter is 1.5"},
		{Options{Backoff: Backoff{Initial: time.Minute, Max: time.Second}}, "Options.Backoff.Max (1s) is below Initial (1m0s)"},
		{Options{Backoff: Backoff{Initial: -time.Second}}, "Options.Backoff.Initial is -1s"},
	} {
		t.Run(tt.want, func(t *testing.T) {
			_, err := New(&tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
	// Through New, as a bus uses it: "no jitter" must survive the defaults.
	b := newBus(t, &Options{Backoff: Backoff{Initial: time.Second, Jitter: -1}}).cfg.backoff
	for n := 1; n < 5; n++ {
		if got, want := b.delay(n), time.Second<<(n-1); got != want {
			t.Fatalf("Delay(%d) with no jitter = %v, want %v", n, got, want)
		}
	}
	bus := newBus(t, nil)
	if err := bus.Handle("opbus", func(context.Context, *Event) (Status, error) { return Status{}, nil }, On{}); err == nil {
		t.Fatal(`a handler took the bus's own slot "opbus"`)
	}
}

// TestCollectorFields: Collect takes the fields a collector reads, parsed
// at registration (a bad path is an error naming the collector), and
// Collectors lists the collectors that read fields, for adapters.
func TestCollectorFields(t *testing.T) {
	b := newBus(t, nil)
	st := func(context.Context, Key, map[string]any) Status { return Status{} }
	must(t, b.Collect("plain", st))
	must(t, b.Collect("db", st, "relations.db", `metadata.annotations["example.com/x"]`))
	err := b.Collect("bad", st, "spec..x")
	if err == nil || !strings.Contains(err.Error(), `collector "bad"`) {
		t.Fatalf("Collect with a bad path = %v, want an error naming the collector", err)
	}
	got := b.Collectors()
	if len(got) != 1 || got[0].ID != "db" || len(got[0].Fields) != 2 || got[0].Fields[1].String() != `metadata.annotations["example.com/x"]` {
		t.Fatalf("Collectors() = %+v, want db with its two fields", got)
	}
	if err := b.Collect("db2", st, "x"); err != nil {
		t.Fatal(err)
	}
}

// slotIDs returns the IDs of every status slot registered so far (of
// handlers, collectors and [Bus.AddSlot]), sorted: what a StatusSink may be
// asked to publish.
func (b *Bus) slotIDs() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reg.owners.IDs()
}
