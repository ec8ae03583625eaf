package opbus

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// TestRestartDoesNotRerun: a new Bus on the same store runs nothing for
// values already handled, and handles once a value changed while down.
func TestRestartDoesNotRerun(t *testing.T) {
	ctx := t.Context()
	store, err := NewFileStore(t.TempDir())
	must(t, err)
	var runs []string
	build := func() *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("image", func(ctx context.Context, ev *Event) (Status, error) {
			runs = append(runs, ev.Type.String()+" "+ev.New["image"].(string))
			return Active(""), nil
		}, On{Fields: []string{"image"}}))
		return b
	}
	other := Key{Kind: "Pod", Namespace: "default", Name: "other"}
	b1 := build()
	must(t, b1.Dispatch(ctx, podKey, map[string]any{"image": "v1"}))
	must(t, b1.Dispatch(ctx, other, map[string]any{"image": "v1"}))

	b2 := build() // the program restarted; the source re-lists everything
	must(t, b2.Dispatch(ctx, podKey, map[string]any{"image": "v1"}))
	must(t, b2.Dispatch(ctx, other, map[string]any{"image": "v2"})) // changed while down
	must(t, b2.Dispatch(ctx, other, map[string]any{"image": "v2"}))
	want := "create v1,create v1,update v2"
	if got := strings.Join(runs, ","); got != want {
		t.Fatalf("runs = %s, want %s", got, want)
	}
}

func TestResumeHandlersRunOncePerBus(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	var resumes, creates int
	build := func() *Bus {
		b := newBus(t, &Options{Store: store})
		must(t, b.Handle("r", func(ctx context.Context, ev *Event) (Status, error) {
			if ev.Type == Resume {
				resumes++
			} else {
				creates++
			}
			return Status{}, nil
		}, On{Types: []EventType{Create, Update, Resume}, Fields: []string{"a"}}))
		return b
	}
	b1 := build()
	must(t, b1.Dispatch(ctx, podKey, map[string]any{"a": 1}))
	must(t, b1.Dispatch(ctx, podKey, map[string]any{"a": 1}))
	b2 := build()
	must(t, b2.Dispatch(ctx, podKey, map[string]any{"a": 1}))
	must(t, b2.Dispatch(ctx, podKey, map[string]any{"a": 1}))
	if creates != 1 || resumes != 1 {
		t.Fatalf("creates %d, resumes %d; want 1 and 1", creates, resumes)
	}
}

func TestCorruptRecordIsReportedNotOverwritten(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	store, err := NewFileStore(dir)
	must(t, err)
	bad := []byte(`{"v":1,"digests":{"h":"zz"}}`)
	must(t, store.Save(ctx, podKey, bad))
	var sink recordingSink
	b := newBus(t, &Options{Store: store, Sink: &sink})
	var h recorder
	must(t, b.Handle("h", h.handle, On{}))
	err = b.Dispatch(ctx, podKey, map[string]any{"a": 1})
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrCorruptRecord) || re.Key != podKey || !strings.Contains(err.Error(), "Pod default/web") {
		t.Fatalf("err = %v, want a RecordError naming the key", err)
	}
	if h.count() != 0 {
		t.Error("handlers ran on an unreadable record")
	}
	got, _ := store.Load(ctx, podKey)
	if string(got) != string(bad) {
		t.Errorf("the corrupt record was overwritten: %s", got)
	}
	if len(sink.calls) != 1 || sink.calls[0].overall.Level != LevelError {
		t.Errorf("sink calls = %+v, want one Error status", sink.calls)
	}
	// Repaired (here: deleted by the user), the key works again.
	must(t, store.Delete(ctx, podKey))
	must(t, b.Dispatch(ctx, podKey, map[string]any{"a": 1}))
	if h.count() != 1 {
		t.Errorf("after repair the handler ran %d times, want 1", h.count())
	}
	for _, data := range []string{`not json`, `{"v":5}`, `{"v":3,"ended":1700000000000}`, `{"v":3,"related":{"Pod/ns/a":"AAAAAAAAAAAAAAAAAAAAAA"}}`, `{"v":4,"related":{"a":"zz"}}`, `{"v":2,"timers":{"a":{"at":1,"every":1000}}}`, `{"v":3,"timers":{"a":{"at":1,"every":0}}}`, `{"v":2,"extra":1}`, `{"v":2,"fails":{"a":{"on":"zz","n":1}}}`, `{"v":2,"pending":[{"snapshot":"AAAA"}]}`, `{"v":1,"extra":1}`, `{"v":1} {}`, `{"v":1,"slots":{"a":{"level":"bogus"}}}`, `{"v":1,"retries":{"a":-1}}`} {
		if _, err := decodeRecord(podKey, []byte(data), nil); !errors.Is(err, ErrCorruptRecord) {
			t.Errorf("decodeRecord(%s) = %v, want ErrCorruptRecord", data, err)
		}
	}
}

func TestSinkOnlyOnChange(t *testing.T) {
	ctx := t.Context()
	var sink recordingSink
	b := newBus(t, &Options{Sink: &sink})
	must(t, b.Handle("h", func(ctx context.Context, ev *Event) (Status, error) {
		if ev.New["x"] == "bad" {
			return Blocked("x is bad"), nil
		}
		return Active(""), nil
	}, On{Fields: []string{"x"}}))
	for _, x := range []string{"bad", "bad", "worse", "good", "good"} {
		must(t, b.Dispatch(ctx, podKey, map[string]any{"x": x, "noise": time.Now().String()}))
	}
	var got []string
	for _, c := range sink.calls {
		got = append(got, c.overall.String())
	}
	if strings.Join(got, ",") != "blocked: x is bad,active" {
		t.Fatalf("sink saw %v", got)
	}
	sink.fail = true
	err := b.Dispatch(ctx, podKey, map[string]any{"x": "bad"})
	if err == nil || !strings.Contains(err.Error(), "publishing status") {
		t.Fatalf("sink failure: got %v", err)
	}
	sink.fail = false
	must(t, b.Dispatch(ctx, podKey, map[string]any{"x": "bad"})) // nothing changed, but the sink is behind
	if n := len(sink.calls); n != 3 || sink.calls[2].overall != Blocked("x is bad") {
		t.Fatalf("a failed publish must be repeated: %+v", sink.calls)
	}
}

// selfWritingStore keeps the record in an annotation of the object itself,
// as the Kubernetes adapter does, and re-observes the object after each
// write, as a watch would.
type selfWritingStore struct {
	mu      sync.Mutex
	bus     *Bus
	objects map[Key]map[string]any
	writes  int
}

const recordAnnotation = `metadata.annotations["opbus.dev/record"]`

func (s *selfWritingStore) WrittenPaths() []string { return []string{recordAnnotation} }

func (s *selfWritingStore) Load(ctx context.Context, key Key) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := lookup(s.objects[key], MustParsePath(recordAnnotation))
	if !ok {
		return nil, nil
	}
	return []byte(v.(string)), nil
}

func (s *selfWritingStore) Save(ctx context.Context, key Key, data []byte) error {
	s.mu.Lock()
	obj := deepCopy(s.objects[key]).(map[string]any)
	md := obj["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	if ann == nil {
		ann = map[string]any{}
		md["annotations"] = ann
	}
	ann["opbus.dev/record"] = string(data)
	md["resourceVersion"] = md["resourceVersion"].(string) + "+"
	s.objects[key] = obj
	s.writes++
	s.mu.Unlock()
	return s.bus.Observe(ctx, key, obj) // the watch event of our own write
}

func (s *selfWritingStore) Delete(ctx context.Context, key Key) error { return nil }

func (s *selfWritingStore) set(key Key, obj map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[key] = obj
}

func TestOwnWritesNeverRetrigger(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &selfWritingStore{objects: map[Key]map[string]any{}}
		b := newBus(t, &Options{Store: store})
		store.bus = b
		var whole, ann recorder
		must(t, b.Handle("whole", whole.handle, On{}))
		must(t, b.Handle("annotations", ann.handle, On{Fields: []string{"metadata.annotations"}}))
		stop := run(t, b)
		obj := pod("1", "running")
		store.set(podKey, obj)
		must(t, b.Observe(t.Context(), podKey, obj))
		time.Sleep(time.Minute)
		synctest.Wait()
		if whole.count() != 1 || ann.count() != 1 {
			t.Fatalf("whole ran %d, annotations ran %d; want 1 and 1", whole.count(), ann.count())
		}
		if store.writes == 0 {
			t.Fatal("the store never wrote: the test proves nothing")
		}
		// a real annotation change still fires
		obj2 := deepCopy(store.objects[podKey]).(map[string]any)
		obj2["metadata"].(map[string]any)["annotations"].(map[string]any)["note"] = "changed"
		store.set(podKey, obj2)
		must(t, b.Observe(t.Context(), podKey, obj2))
		time.Sleep(time.Minute)
		synctest.Wait()
		if whole.count() != 2 || ann.count() != 2 {
			t.Fatalf("after a real change: whole %d, annotations %d; want 2 and 2", whole.count(), ann.count())
		}
		must(t, stop())
	})
}

func TestDeleteHandlers(t *testing.T) {
	ctx := t.Context()
	store := NewMemoryStore()
	var deletes recorder
	fail := true
	deletes.result = func(ev *Event) (Status, error) {
		if fail {
			return Status{}, errors.New("cleanup failed")
		}
		return Status{}, nil
	}
	var sink deleteSink
	b := newBus(t, &Options{Store: store, Sink: &sink})
	must(t, b.Handle("cleanup", deletes.handle, On{Types: []EventType{Delete}}))
	must(t, b.Handle("upd", func(context.Context, *Event) (Status, error) { return Active(""), nil }, On{}))
	must(t, b.Dispatch(ctx, podKey, pod("1", "running")))
	if deletes.count() != 0 {
		t.Fatal("a delete handler ran on create")
	}
	if err := b.DispatchDelete(ctx, podKey, pod("2", "running")); err == nil {
		t.Fatal("want the delete handler's error")
	}
	if data, _ := store.Load(ctx, podKey); data == nil {
		t.Fatal("the record was deleted although a delete handler failed")
	}
	fail = false
	must(t, b.DispatchDelete(ctx, podKey, pod("2", "running")))
	ev := deletes.last()
	if deletes.count() != 2 || ev.Type != Delete || ev.New != nil || ev.Old == nil || ev.Object()["kind"] != "Pod" {
		t.Fatalf("delete events: %d, last %+v", deletes.count(), ev)
	}
	if data, _ := store.Load(ctx, podKey); !isTombstone(data) {
		t.Errorf("record left after a handled deletion, not a tombstone: %s", data)
	}
	if sink.deleted != 1 {
		t.Errorf("DeleteSink.Deleted called %d times, want 1", sink.deleted)
	}
}

type deleteSink struct {
	recordingSink
	deleted int
}

func (s *deleteSink) Deleted(ctx context.Context, key Key, last map[string]any) error {
	s.deleted++
	return nil
}

// TestPendingRecordDoesNotNest: the state saved at shutdown leaves out the
// library's own writes, so a record kept in the object never nests.
func TestPendingRecordDoesNotNest(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := NewMemoryStore()
		b := newBus(t, &Options{Store: store, Ignore: []string{recordAnnotation}, Backoff: Backoff{Initial: time.Hour}})
		must(t, b.Handle("h", func(context.Context, *Event) (Status, error) { return Status{}, errors.New("down") }, On{}))
		stop := run(t, b)
		obj := pod("1", "running")
		obj["metadata"].(map[string]any)["annotations"].(map[string]any)["opbus.dev/record"] = `{"v":1,"big":"old record"}`
		must(t, b.Observe(t.Context(), podKey, obj))
		synctest.Wait()
		must(t, stop())
		data, _ := store.Load(t.Context(), podKey)
		if !strings.Contains(string(data), `"pending"`) || strings.Contains(string(data), "old record") {
			t.Fatalf("record %s: want a pending state without the old record", data)
		}
	})
}
