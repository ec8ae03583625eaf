package opbus

import (
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

type phase string

type labels map[string]string

type port int32

// TestDoorConverts: the door takes the Go values whose JSON form is
// evident (string maps and slices, named strings, typed numbers, pointers
// to them) and hands handlers their canonical form, without modifying the
// caller's document and sharing what needed no conversion.
func TestDoorConverts(t *testing.T) {
	name := "web"
	var nilTags []string
	spec := map[string]any{"image": "app:1"}
	doc := map[string]any{
		"metadata": map[string]any{"labels": labels{"app": "web"}, "annotations": map[string]string{"a/b": "c"}},
		"spec":     spec,
		"status": map[string]any{
			"phase":    phase("Running"),
			"tags":     []string{"a", "b"},
			"none":     nilTags,
			"nomap":    map[string]string(nil),
			"ports":    []port{80, 443},
			"pair":     [2]bool{true, false},
			"replicas": int32(3),
			"ratio":    float32(0.1),
			"big":      uint64(math.MaxUint64),
			"name":     &name,
			"nested":   map[string][]string{"x": {"y"}},
			"list":     []any{"keep", []string{"z"}},
		},
	}
	want := map[string]any{
		"metadata": map[string]any{"labels": map[string]any{"app": "web"}, "annotations": map[string]any{"a/b": "c"}},
		"spec":     map[string]any{"image": "app:1"},
		"status": map[string]any{
			"phase":    "Running",
			"tags":     []any{"a", "b"},
			"none":     nil,
			"nomap":    nil,
			"ports":    []any{int64(80), int64(443)},
			"pair":     []any{true, false},
			"replicas": int64(3),
			"ratio":    0.1,
			"big":      uint64(math.MaxUint64),
			"name":     "web",
			"nested":   map[string]any{"x": []any{"y"}},
			"list":     []any{"keep", []any{"z"}},
		},
	}
	for _, call := range []string{"Observe", "Dispatch", "ObserveUpdate"} {
		t.Run(call, func(t *testing.T) {
			b := newBus(t, nil)
			var seen *Event
			must(t, b.Handle("h", func(_ context.Context, ev *Event) (Status, error) { seen = ev; return Status{}, nil }, On{}))
			switch call {
			case "Observe":
				must(t, b.Observe(t.Context(), podKey, doc))
				stop := run(t, b)
				must(t, b.Wait(t.Context()))
				must(t, stop())
			case "Dispatch":
				must(t, b.Dispatch(t.Context(), podKey, doc))
			case "ObserveUpdate":
				must(t, b.ObserveUpdate(t.Context(), podKey, map[string]any{"tags": []string{"old"}}, doc))
				stop := run(t, b)
				must(t, b.Wait(t.Context()))
				must(t, stop())
			}
			if seen == nil {
				t.Fatal("the handler did not run")
			}
			if !reflect.DeepEqual(seen.New, want) {
				t.Errorf("the handler saw %#v, want %#v", seen.New, want)
			}
			if err := validDocument(seen.New); err != nil {
				t.Errorf("the handler's document is not canonical: %v", err)
			}
			if _, ok := doc["status"].(map[string]any)["tags"].([]string); !ok {
				t.Error("the caller's document was modified")
			}
			if reflect.ValueOf(seen.New["spec"]).UnsafePointer() != reflect.ValueOf(spec).UnsafePointer() {
				t.Error("a part that needed no conversion was copied")
			}
			if call == "ObserveUpdate" && !reflect.DeepEqual(seen.Old, map[string]any{"tags": []any{"old"}}) {
				t.Errorf("the previous state came as %#v, want it converted", seen.Old)
			}
		})
	}
}

// TestDoorKeepsCanonicalDocument: a document that is already canonical
// enters as it is, not as a copy.
func TestDoorKeepsCanonicalDocument(t *testing.T) {
	for name, doc := range map[string]map[string]any{
		"decoded":   {"spec": map[string]any{"replicas": 3.0, "tags": []any{"a"}}, "n": int64(1), "j": json.Number("2")},
		"hand-made": {"spec": map[string]any{"replicas": 3, "on": true, "none": nil}},
	} {
		got, err := admitDocument(doc)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(doc).UnsafePointer() {
			t.Errorf("%s: a canonical document was copied", name)
		}
	}
}

// TestDoorRejects: a value without an evident JSON form is an error
// returned by the call, naming the key, the path and the Go type, with
// one "opbus:" prefix; nothing is queued and no slot shows it.
func TestDoorRejects(t *testing.T) {
	type spec struct{ Replicas int }
	tests := []struct {
		name string
		doc  map[string]any
		want string
	}{
		{"chan in a list", map[string]any{"spec": map[string]any{"tags": []any{"a", "b", make(chan int)}}},
			"opbus: state of Pod default/web: value at spec.tags[2]: unsupported type chan int: expected a JSON-like value: a map with string keys, a slice, a string, a bool, a number or nil"},
		{"chan in a []any inside a typed map", map[string]any{"spec": map[string][]any{"tags": {make(chan int)}}},
			"opbus: state of Pod default/web: value at spec.tags[0]: unsupported type chan int"},
		{"struct", map[string]any{"spec": spec{Replicas: 3}},
			"opbus: state of Pod default/web: value at spec: unsupported type opbus.spec: a struct's JSON form follows its field tags: convert it with opbus.Document"},
		{"pointer to struct", map[string]any{"spec": &spec{}},
			"opbus: state of Pod default/web: value at spec: unsupported type *opbus.spec: a struct's JSON form follows its field tags: convert it with opbus.Document"},
		{"time.Time", map[string]any{"at": time.Unix(0, 0)},
			"opbus: state of Pod default/web: value at at: unsupported type time.Time: it has its own JSON encoding: convert it with opbus.Document"},
		{"bytes", map[string]any{"data": []byte("x")},
			"opbus: state of Pod default/web: value at data: unsupported type []byte: encoding/json writes bytes in base64: convert them to a string"},
		{"int keys", map[string]any{"m": map[int]string{1: "a"}},
			"opbus: state of Pod default/web: value at m: unsupported type map[int]string: a map's keys must be strings"},
		{"NaN", map[string]any{"x": []float32{float32(math.NaN())}},
			"opbus: state of Pod default/web: value at x[0]: not a finite number: JSON has no NaN or infinity"},
		{"bad json.Number", map[string]any{"x": []any{json.Number("1x")}},
			"opbus: state of Pod default/web: value at x[0]: not a valid JSON number"},
		{"func", map[string]any{"f": func() {}},
			"opbus: state of Pod default/web: value at f: unsupported type func(): expected a JSON-like value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newBus(t, nil)
			var h recorder
			must(t, b.Handle("h", h.handle, On{}))
			for call, err := range map[string]error{
				"Observe":  b.Observe(t.Context(), podKey, tc.doc),
				"Dispatch": b.Dispatch(t.Context(), podKey, tc.doc),
			} {
				if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
					t.Errorf("%s: got %v, want %q", call, err, tc.want)
				} else if n := strings.Count(err.Error(), "opbus:"); n != 1 {
					t.Errorf("%s: %q has %d prefixes, want 1", call, err, n)
				}
			}
			err := b.ObserveUpdate(t.Context(), podKey, tc.doc, map[string]any{})
			if want := strings.Replace(tc.want, "state of", "previous state of", 1); err == nil || !strings.HasPrefix(err.Error(), want) {
				t.Errorf("ObserveUpdate: got %v, want %q", err, want)
			}
			if b.Stats().Queued != 0 || h.count() != 0 {
				t.Error("a rejected document was queued or handled")
			}
			if _, slots, err := b.Status(t.Context(), podKey); err != nil || len(slots) != 0 {
				t.Errorf("slots %v (%v): a rejected document left a status", slots, err)
			}
		})
	}
}

// TestDoorErrorIsDeterministic: of several bad values, the error names the
// first in path order, every time.
func TestDoorErrorIsDeterministic(t *testing.T) {
	doc := map[string]any{}
	for _, k := range []string{"d", "b", "c", "e", "a"} {
		doc[k] = map[string]any{"x": make(chan int), "y": map[string]any{"z": func() {}}}
	}
	for range 20 {
		_, err := admitDocument(doc)
		if err == nil || !strings.HasPrefix(err.Error(), "opbus: value at a.x: ") {
			t.Fatalf("got %v, want the error at a.x", err)
		}
	}
}

// TestDoorValuesDigestByValue: a converted value is the value its JSON
// form is, so a typed document and the same document decoded from JSON
// run a handler once, and a real change runs it again.
func TestDoorValuesDigestByValue(t *testing.T) {
	b := newBus(t, nil)
	var h recorder
	must(t, b.Handle("h", h.handle, On{Fields: []string{"spec"}}))
	ctx := t.Context()
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": map[string]any{"replicas": int32(3), "tags": []string{"a"}, "labels": map[string]string{"k": "v"}, "phase": phase("Up"), "ratio": float32(0.1)}}))
	var decoded map[string]any
	must(t, json.Unmarshal([]byte(`{"spec":{"replicas":3,"tags":["a"],"labels":{"k":"v"},"phase":"Up","ratio":0.1}}`), &decoded))
	must(t, b.Dispatch(ctx, podKey, decoded))
	if h.count() != 1 {
		t.Fatalf("the handler ran %d times for one value, want 1", h.count())
	}
	must(t, b.Dispatch(ctx, podKey, map[string]any{"spec": map[string]any{"replicas": port(4), "tags": []string{"a"}, "labels": labels{"k": "v"}, "phase": "Up", "ratio": 0.1}}))
	if h.count() != 2 {
		t.Fatalf("the handler ran %d times after a change, want 2", h.count())
	}
}
