package opbus

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// webApp is a document as a handler gets it: decoded from JSON (float64
// numbers), with a keyed list and a null.
func webApp(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	must(t, json.Unmarshal([]byte(`{
		"metadata": {"name": "web", "labels": {"app": "web", "tier": "front"}, "deletionTimestamp": null},
		"spec": {"version": "1.2", "replicas": 3, "ratio": 0.5, "paused": false, "tags": ["a", "b"],
			"containers": [{"name": "app", "image": "app:1", "port": 8080}, {"name": "log", "image": "log:2"}]},
		"status": {"phase": "Running", "big": 1e300}
	}`), &doc))
	doc["status"].(map[string]any)["int64"] = int64(1<<62 + 1)
	return doc
}

type webAppSpec struct {
	Version    string            `json:"version"`
	Replicas   int               `json:"replicas"`
	Tags       []string          `json:"tags"`
	Containers []containerSpec   `json:"containers"`
	Extra      map[string]string `json:"extra"`
}

type containerSpec struct {
	Name  string `json:"name"`
	Image string `json:"image"`
	Port  int    `json:"port"`
}

// TestGet: typed reads convert what has one meaning in T and name the path
// and both types otherwise; Juju's and encoding/json's float64 whole
// numbers read as ints.
func TestGet(t *testing.T) {
	doc := webApp(t)
	check := func(t *testing.T, got, want any, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("got error %v, want %#v", err, want)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("got %#v, want %#v", got, want)
		}
	}
	t.Run("string", func(t *testing.T) { v, err := Get[string](doc, "spec.version"); check(t, v, "1.2", err) })
	t.Run("float64 3 as int", func(t *testing.T) { v, err := Get[int](doc, "spec.replicas"); check(t, v, 3, err) })
	t.Run("as int32", func(t *testing.T) { v, err := Get[int32](doc, "spec.replicas"); check(t, v, int32(3), err) })
	t.Run("as uint8", func(t *testing.T) { v, err := Get[uint8](doc, "spec.replicas"); check(t, v, uint8(3), err) })
	t.Run("as float64", func(t *testing.T) { v, err := Get[float64](doc, "spec.ratio"); check(t, v, 0.5, err) })
	t.Run("int64 beyond 2^53", func(t *testing.T) { v, err := Get[int64](doc, "status.int64"); check(t, v, int64(1<<62+1), err) })
	t.Run("bool", func(t *testing.T) { v, err := Get[bool](doc, "spec.paused"); check(t, v, false, err) })
	t.Run("named string", func(t *testing.T) { v, err := Get[phase](doc, "status.phase"); check(t, v, phase("Running"), err) })
	t.Run("named int", func(t *testing.T) {
		v, err := Get[port](doc, "spec.containers[name=app].port")
		check(t, v, port(8080), err)
	})
	t.Run("by key", func(t *testing.T) {
		v, err := Get[string](doc, "spec.containers[name=log].image")
		check(t, v, "log:2", err)
	})
	t.Run("by index", func(t *testing.T) { v, err := Get[string](doc, "spec.tags[1]"); check(t, v, "b", err) })
	t.Run("any", func(t *testing.T) { v, err := Get[any](doc, "spec.tags"); check(t, v, []any{"a", "b"}, err) })
	t.Run("map[string]any", func(t *testing.T) {
		v, err := Get[map[string]any](doc, "metadata.labels")
		check(t, v, map[string]any{"app": "web", "tier": "front"}, err)
	})
	t.Run("[]any", func(t *testing.T) { v, err := Get[[]any](doc, "spec.tags"); check(t, v, []any{"a", "b"}, err) })
	t.Run("map[string]string", func(t *testing.T) {
		v, err := Get[map[string]string](doc, "metadata.labels")
		check(t, v, map[string]string{"app": "web", "tier": "front"}, err)
	})
	t.Run("[]string", func(t *testing.T) { v, err := Get[[]string](doc, "spec.tags"); check(t, v, []string{"a", "b"}, err) })
	t.Run("pointer", func(t *testing.T) { v, err := Get[*int](doc, "spec.replicas"); check(t, *v, 3, err) })
	t.Run("struct", func(t *testing.T) {
		v, err := Get[webAppSpec](doc, "spec")
		check(t, v, webAppSpec{Version: "1.2", Replicas: 3, Tags: []string{"a", "b"},
			Containers: []containerSpec{{"app", "app:1", 8080}, {"log", "log:2", 0}}}, err)
	})
	t.Run("key with a dot", func(t *testing.T) {
		d := map[string]any{"metadata": map[string]any{"annotations": map[string]any{"example.com/x": "y"}}}
		v, err := Get[string](d, `metadata.annotations["example.com/x"]`)
		check(t, v, "y", err)
	})
}

// TestGetErrors: each error names the path, and for a value of the wrong
// type the type found and the type wanted; absent fields wrap ErrAbsent,
// and nothing else does.
func TestGetErrors(t *testing.T) {
	doc := webApp(t)
	tests := []struct {
		name   string
		get    func() error
		want   string
		absent bool
	}{
		{"missing key", func() error { _, err := Get[string](doc, "spec.image"); return err },
			`opbus: field spec.image is absent: spec has no key "image"`, true},
		{"missing parent", func() error { _, err := Get[string](doc, "spec.template.image"); return err },
			`opbus: field spec.template.image is absent: spec has no key "template"`, true},
		{"missing at the root", func() error { _, err := Get[string](doc, "data"); return err },
			`opbus: field data is absent: the document has no key "data"`, true},
		{"null", func() error { _, err := Get[string](doc, "metadata.deletionTimestamp"); return err },
			`opbus: field metadata.deletionTimestamp is absent: it is null`, true},
		{"under null", func() error { _, err := Get[string](doc, "metadata.deletionTimestamp.x"); return err },
			`opbus: field metadata.deletionTimestamp.x is absent: metadata.deletionTimestamp is null`, true},
		{"index past the end", func() error { _, err := Get[string](doc, "spec.tags[2]"); return err },
			`opbus: field spec.tags[2] is absent: spec.tags has 2 elements`, true},
		{"no element with that key", func() error { _, err := Get[string](doc, "spec.containers[name=db].image"); return err },
			`opbus: field spec.containers[name=db].image is absent: spec.containers has no element with name=db`, true},
		{"nil document", func() error { _, err := Get[string](nil, "spec"); return err },
			`opbus: field spec is absent: the document has no key "spec"`, true},
		{"3.5 as int", func() error { _, err := Get[int](doc, "spec.ratio"); return err },
			`opbus: value at spec.ratio: got float64 0.5, want int: not a whole number`, false},
		{"1e300 as int64", func() error { _, err := Get[int64](doc, "status.big"); return err },
			`opbus: value at status.big: got float64 1e+300, want int64: out of its range`, false},
		{"8080 as int8", func() error { _, err := Get[int8](doc, "spec.containers[0].port"); return err },
			`opbus: value at spec.containers[0].port: got float64 8080, want int8: out of its range`, false},
		{"-1 as uint", func() error { _, err := Get[uint](map[string]any{"n": -1.0}, "n"); return err },
			`opbus: value at n: got float64 -1, want uint: out of its range`, false},
		{"string as int", func() error { _, err := Get[int](doc, "spec.version"); return err },
			`opbus: value at spec.version: got string, want int`, false},
		{"number as string", func() error { _, err := Get[string](doc, "spec.replicas"); return err },
			`opbus: value at spec.replicas: got float64 3, want string`, false},
		{"map as string", func() error { _, err := Get[string](doc, "spec"); return err },
			`opbus: value at spec: got map[string]any, want string`, false},
		{"list as map", func() error { _, err := Get[map[string]any](doc, "spec.tags"); return err },
			`opbus: value at spec.tags: got []any, want map[string]any`, false},
		{"bool as named string", func() error { _, err := Get[phase](doc, "spec.paused"); return err },
			`opbus: value at spec.paused: got bool false, want opbus.phase`, false},
		{"through a string", func() error { _, err := Get[string](doc, "spec.version.major"); return err },
			`opbus: value at spec.version: got string, want a map to look up "major" in (reading spec.version.major)`, false},
		{"index into a map", func() error { _, err := Get[string](doc, "spec[0]"); return err },
			`opbus: value at spec: got map[string]any, want a list to find [0] in (reading spec[0])`, false},
		{"struct field of the wrong type", func() error {
			_, err := Get[webAppSpec](map[string]any{"spec": map[string]any{"containers": []any{map[string]any{}, map[string]any{"port": "http"}}}}, "spec")
			return err
		}, `opbus: value at spec.containers[1].port: got string, want int`, false},
		{"struct field not whole", func() error {
			_, err := Get[webAppSpec](map[string]any{"spec": map[string]any{"replicas": 2.5}}, "spec")
			return err
		}, `opbus: value at spec.replicas: got float64 2.5, want int`, false},
		{"map value of the wrong type", func() error {
			_, err := Get[webAppSpec](map[string]any{"spec": map[string]any{"extra": map[string]any{"a.b": 1.0}}}, "spec")
			return err
		}, `opbus: value at spec.extra["a.b"]: got float64 1, want string`, false},
		{"wildcard", func() error { _, err := Get[string](doc, "spec.containers[*].image"); return err },
			`opbus: field path spec.containers[*].image: [*] stands for any number of values and Get reads one: name an element by index or key, or visit them all with Resolve`, false},
		{"bad path", func() error { _, err := Get[string](doc, "spec..image"); return err },
			`opbus: field path spec..image: at offset 5: empty key between dots: expected a key`, false},
	}
	t.Run("zero value on error", func(t *testing.T) {
		v, err := Get[webAppSpec](map[string]any{"spec": map[string]any{"version": "2", "replicas": "x"}}, "spec")
		if err == nil || !reflect.DeepEqual(v, webAppSpec{}) {
			t.Errorf("got %+v, %v; want the zero value and an error", v, err)
		}
	})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.get()
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
			if errors.Is(err, ErrAbsent) != tc.absent {
				t.Errorf("errors.Is(err, ErrAbsent) = %t, want %t", !tc.absent, tc.absent)
			}
			var ve *ValueError
			if errors.As(err, &ve) == tc.absent && !strings.Contains(tc.want, "field path") {
				t.Errorf("errors.As(err, *ValueError) = %t, want %t", !tc.absent, !tc.absent)
			}
		})
	}
}

// TestGetDefault: ErrAbsent gives an optional field its default, while a
// present value of the wrong type stays an error.
func TestGetDefault(t *testing.T) {
	replicas := func(doc map[string]any) (int, error) {
		n, err := Get[int](doc, "spec.replicas")
		if errors.Is(err, ErrAbsent) {
			return 1, nil
		}
		return n, err
	}
	for _, tc := range []struct {
		doc  map[string]any
		want int
		err  bool
	}{
		{map[string]any{}, 1, false},
		{map[string]any{"spec": map[string]any{"replicas": nil}}, 1, false},
		{map[string]any{"spec": map[string]any{"replicas": 4.0}}, 4, false},
		{map[string]any{"spec": map[string]any{"replicas": "4"}}, 0, true},
	} {
		got, err := replicas(tc.doc)
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%v: got %d, %v; want %d, error %t", tc.doc, got, err, tc.want, tc.err)
		}
	}
}

// TestDecode: a document or a part of one decodes into a struct through
// its JSON form; fields it lacks keep their defaults; a nil part leaves
// the struct as it is; errors name the path inside the decoded value.
func TestDecode(t *testing.T) {
	doc := webApp(t)
	spec := webAppSpec{Replicas: 1, Version: "0"}
	must(t, Decode(doc["spec"], &spec))
	if spec.Replicas != 3 || spec.Version != "1.2" || len(spec.Containers) != 2 || spec.Containers[0].Port != 8080 {
		t.Errorf("got %+v", spec)
	}
	defaults := webAppSpec{Replicas: 1}
	must(t, Decode(map[string]any{"version": "2"}, &defaults))
	if defaults.Replicas != 1 || defaults.Version != "2" {
		t.Errorf("absent fields lost their defaults: %+v", defaults)
	}
	untouched := webAppSpec{Replicas: 7}
	must(t, Decode(doc["absent"], &untouched))
	if untouched.Replicas != 7 {
		t.Errorf("a nil value changed the struct: %+v", untouched)
	}
	var whole struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Status struct {
			Int64 int64 `json:"int64"`
		} `json:"status"`
	}
	must(t, Decode(doc, &whole))
	if whole.Metadata.Labels["tier"] != "front" || whole.Status.Int64 != 1<<62+1 {
		t.Errorf("got %+v", whole)
	}
	var n int
	must(t, Decode(3.0, &n))
	if n != 3 {
		t.Errorf("Decode(3.0) = %d, want 3", n)
	}
	var at time.Time
	must(t, Decode("2026-01-02T03:04:05Z", &at))
	if at.Year() != 2026 {
		t.Errorf("a type with its own UnmarshalJSON decoded to %v", at)
	}
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"not a pointer", Decode(doc, spec), "opbus: Decode into opbus.webAppSpec: expected a non-nil pointer"},
		{"nil pointer", Decode(doc, (*webAppSpec)(nil)), "opbus: Decode into *opbus.webAppSpec: expected a non-nil pointer"},
		{"root", Decode([]any{"x"}, &spec), "opbus: value at (root): got []any, want opbus.webAppSpec"},
		{"nested", Decode(map[string]any{"containers": []any{map[string]any{"port": 1.5}}}, &spec),
			"opbus: value at containers[0].port: got float64 1.5, want int"},
		{"own UnmarshalJSON failing", Decode("yesterday", &at), // the reason is time.Time's own
			`opbus: value at (root): cannot decode into time.Time: parsing time "yesterday"`},
		{"int out of range", Decode(math.MaxFloat64, &n), "opbus: value at (root): got float64 1.7976931348623157e+308, want int: out of its range"},
	} {
		if tc.err == nil || !strings.HasPrefix(tc.err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, tc.err, tc.want)
		}
	}
}

// TestDocument: a struct's JSON form as a document, with integers as int64
// and other numbers as float64, ready for the door; a value whose JSON
// form is not an object is an error naming its type.
func TestDocument(t *testing.T) {
	type meta struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels,omitempty"`
	}
	type app struct {
		Metadata meta      `json:"metadata"`
		Replicas int32     `json:"replicas"`
		Big      uint64    `json:"big"`
		Ratio    float64   `json:"ratio"`
		Skip     string    `json:"-"`
		When     time.Time `json:"when"`
	}
	doc, err := Document(&app{Metadata: meta{Name: "web", Labels: map[string]string{"a": "b"}}, Replicas: 3, Big: math.MaxUint64, Ratio: 0.25, Skip: "x", When: time.Unix(0, 0).UTC()})
	must(t, err)
	want := map[string]any{
		"metadata": map[string]any{"name": "web", "labels": map[string]any{"a": "b"}},
		"replicas": int64(3), "big": uint64(math.MaxUint64), "ratio": 0.25, "when": "1970-01-01T00:00:00Z",
	}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("got %#v, want %#v", doc, want)
	}
	if got, err := admitDocument(doc); err != nil || reflect.ValueOf(got).UnsafePointer() != reflect.ValueOf(doc).UnsafePointer() {
		t.Errorf("a Document is not canonical: %v", err)
	}
	for _, tc := range []struct {
		v    any
		want string
	}{
		{[]int{1}, "opbus: document of []int: its JSON form is an array, not an object: a document is a JSON object"},
		{(*app)(nil), "opbus: document of *opbus.app: its JSON form is null, not an object: a document is a JSON object"},
		{"x", "opbus: document of string: its JSON form is a string, not an object: a document is a JSON object"},
		{map[string]any{"c": make(chan int)}, "opbus: document of map[string]interface {}: json: unsupported type: chan int"},
	} {
		if _, err := Document(tc.v); err == nil || err.Error() != tc.want {
			t.Errorf("Document(%#v): got %v, want %q", tc.v, err, tc.want)
		}
	}
}
