package opbus

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus/internal/jsondiff"
)

// obj decodes JSON with encoding/json's defaults (numbers as float64).
func obj(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func diffText(d Diff) string {
	var lines []string
	for _, c := range d {
		lines = append(lines, c.String())
	}
	return strings.Join(lines, "\n")
}

func TestCompare(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"equal", `{"a":1,"b":[1,2]}`, `{"b":[1,2],"a":1}`, nil},
		{"map change", `{"a":1}`, `{"a":2}`, []string{"change a: 1 → 2"}},
		{"keys sorted", `{"z":1,"a":1,"m":1}`, `{"z":2,"a":2,"m":2}`,
			[]string{"change a: 1 → 2", "change m: 1 → 2", "change z: 1 → 2"}},
		{"adds and removes sorted with changes", `{"b":1,"d":1}`, `{"a":1,"b":2,"c":1}`,
			[]string{"add a = 1", "change b: 1 → 2", "add c = 1", "remove d (was 1)"}},
		{"absent to null is an add", `{}`, `{"a":null}`, []string{"add a = null"}},
		{"null to absent is a remove", `{"a":null}`, `{}`, []string{"remove a (was null)"}},
		{"null to value is a change", `{"a":null}`, `{"a":1}`, []string{"change a: null → 1"}},
		{"type change map to string is one change", `{"a":{"b":1}}`, `{"a":"x"}`, []string{`change a: {"b":1} → "x"`}},
		{"type change list to map", `{"a":[1]}`, `{"a":{"0":1}}`, []string{`change a: [1] → {"0":1}`}},
		{"nested", `{"s":{"c":[{"n":"a","x":1}]}}`, `{"s":{"c":[{"n":"a","x":2}]}}`, []string{"change s.c[0].x: 1 → 2"}},
		{"list grows: element changes first, then adds by new index", `[1,2]`, `[9,2,3,4]`,
			[]string{"change [0]: 1 → 9", "add [2] = 3", "add [3] = 4"}},
		{"list shrinks: removes by old index ascending", `[1,2,3,4]`, `[1,5]`,
			[]string{"change [1]: 2 → 5", "remove [2] (was 3)", "remove [3] (was 4)"}},
		{"root scalar", `1`, `2`, []string{"change (root): 1 → 2"}},
		{"quoted key", `{"m":{"a.b/c":1}}`, `{"m":{"a.b/c":2}}`, []string{`change m["a.b/c"]: 1 → 2`}},
		{"bool", `{"a":true}`, `{"a":false}`, []string{"change a: true → false"}},
		{"string vs number", `{"a":"1"}`, `{"a":1}`, []string{`change a: "1" → 1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Compare(obj(t, tt.old), obj(t, tt.new))
			if g, w := diffText(got), strings.Join(tt.want, "\n"); g != w {
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestCompareNumbersByValue(t *testing.T) {
	asFloat := map[string]any{"n": float64(3), "l": []any{float64(1), 2.5}}
	asInt64 := map[string]any{"n": int64(3), "l": []any{int64(1), 2.5}}
	asInt := map[string]any{"n": 3, "l": []any{1, json.Number("2.5")}}
	asNumber := map[string]any{"n": json.Number("3"), "l": []any{json.Number("1.0"), float32(2.5)}}
	for _, pair := range [][2]any{{asFloat, asInt64}, {asInt64, asInt}, {asInt, asNumber}, {asNumber, asFloat}} {
		if d := Compare(pair[0], pair[1]); len(d) != 0 {
			t.Errorf("Compare(%v, %v) = %v, want no change", pair[0], pair[1], d)
		}
	}
	if d := Compare(int64(1<<53+1), float64(1<<53)); len(d) != 1 {
		t.Errorf("large int64 vs nearest float64: got %v, want one change", d)
	}
	if d := Compare(2.5, int64(2)); len(d) != 1 {
		t.Errorf("2.5 vs 2: got %v, want one change", d)
	}
}

// TestComparePodDecodedTwoWays checks that a Pod decoded as encoding/json does
// (float64) and as client-go's unstructured objects do (int64) compares equal.
func TestComparePodDecodedTwoWays(t *testing.T) {
	raw := `{"spec":{"containers":[{"name":"app","ports":[{"containerPort":8080}]}],
		"terminationGracePeriodSeconds":30},"status":{"containerStatuses":[{"name":"app","restartCount":2}]}}`
	f := obj(t, raw)
	dec := json.NewDecoder(strings.NewReader(raw))
	dec.UseNumber()
	var n any
	if err := dec.Decode(&n); err != nil {
		t.Fatal(err)
	}
	i := toInt64(n)
	for _, other := range []any{n, i} {
		if d := Compare(f, other); len(d) != 0 {
			t.Errorf("got %v, want no change", d)
		}
	}
}

// toInt64 converts json.Number integers to int64, as client-go does.
func toInt64(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := map[string]any{}
		for k, e := range x {
			m[k] = toInt64(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = toInt64(e)
		}
		return l
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return i
		}
		f, _ := x.Float64()
		return f
	}
	return v
}

func TestComparerIgnore(t *testing.T) {
	c, err := NewComparer(&CompareOptions{Ignore: []string{
		"metadata.resourceVersion", "metadata.managedFields", `metadata.annotations["opbus.dev/record"]`, "status.conditions[*].lastHeartbeatTime",
	}})
	if err != nil {
		t.Fatal(err)
	}
	old := obj(t, `{"metadata":{"resourceVersion":"1","managedFields":[{"a":1}],"annotations":{"opbus.dev/record":"x","keep":"1"}},
		"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"t1","status":"True"}]}}`)
	noise := obj(t, `{"metadata":{"resourceVersion":"2","managedFields":[{"a":2},{"b":1}],"annotations":{"opbus.dev/record":"y","keep":"1"}},
		"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"t2","status":"True"}]}}`)
	if d := c.Compare(old, noise); len(d) != 0 {
		t.Fatalf("only ignored paths changed, got %v", d)
	}
	real := obj(t, `{"metadata":{"resourceVersion":"3","annotations":{"keep":"2"}},
		"status":{"conditions":[{"type":"Ready","lastHeartbeatTime":"t3","status":"False"}]}}`)
	want := `change metadata.annotations.keep: "1" → "2"` + "\n" + `change status.conditions[0].status: "True" → "False"`
	if got := diffText(c.Compare(old, real)); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if !c.ignored(MustParsePath("metadata.managedFields[3].x")) || c.ignored(MustParsePath("metadata.name")) {
		t.Error("Ignored: wrong answer")
	}
}

func TestComparerListKeys(t *testing.T) {
	c, err := NewComparer(&CompareOptions{ListKeys: map[string]string{
		"containers": "name", "status.conditions": "type", "spec.ports": "port"}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"reorder alone is no change",
			`{"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}]}}`,
			`{"spec":{"containers":[{"name":"b","image":"2"},{"name":"a","image":"1"}]}}`, nil},
		{"element addressed by key",
			`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"1"}]}}}}`,
			`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"2"}]}}}}`,
			[]string{`change spec.template.spec.containers[name=app].image: "1" → "2"`}},
		{"add and remove by key, sorted by key",
			`{"status":{"conditions":[{"type":"Ready"},{"type":"Old"}]}}`,
			`{"status":{"conditions":[{"type":"Ready"},{"type":"Alive"}]}}`,
			[]string{`add status.conditions[type=Alive] = {"type":"Alive"}`, `remove status.conditions[type=Old] (was {"type":"Old"})`}},
		{"numeric key",
			`{"spec":{"ports":[{"port":80,"x":1},{"port":443,"x":1}]}}`,
			`{"spec":{"ports":[{"port":443,"x":2},{"port":80,"x":1}]}}`,
			[]string{`change spec.ports[port=443].x: 1 → 2`}},
		{"duplicate keys fall back to index",
			`{"x":{"containers":[{"name":"a","v":1},{"name":"a","v":2}]}}`,
			`{"x":{"containers":[{"name":"a","v":1},{"name":"a","v":3}]}}`,
			[]string{`change x.containers[1].v: 2 → 3`}},
		{"missing key falls back to index",
			`{"containers":[{"image":"a"}]}`, `{"containers":[{"image":"b"}]}`,
			[]string{`change containers[0].image: "a" → "b"`}},
		{"unanchored pattern is anchored",
			`{"other":{"spec":{"ports":[{"port":1,"x":1}]}}}`, `{"other":{"spec":{"ports":[{"port":1,"x":2}]}}}`,
			[]string{`change other.spec.ports[0].x: 1 → 2`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := c.Compare(obj(t, tt.old), obj(t, tt.new))
			if g, w := diffText(got), strings.Join(tt.want, "\n"); g != w {
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
		})
	}
}

func TestNewComparerErrors(t *testing.T) {
	for _, opts := range []*CompareOptions{
		{Ignore: []string{"a..b"}},
		{ListKeys: map[string]string{"a[": "name"}},
		{ListKeys: map[string]string{"containers": ""}},
	} {
		if _, err := NewComparer(opts); err == nil || !strings.HasPrefix(err.Error(), "opbus: ") {
			t.Errorf("NewComparer(%+v): got %v, want an opbus error", opts, err)
		}
	}
	many := make([]string, jsondiff.MaxPatterns+1)
	for i := range many {
		many[i] = "a.b" + strings.Repeat("c", i)
	}
	if _, err := NewComparer(&CompareOptions{Ignore: many}); err == nil {
		t.Error("65 patterns: want an error")
	}
}

func TestCompareDeterministic(t *testing.T) {
	old := map[string]any{}
	new := map[string]any{}
	for i := 0; i < 50; i++ {
		k := string(rune('A' + i))
		old[k] = map[string]any{"x": i, "y": []any{i}}
		new[k] = map[string]any{"x": i + 1, "y": []any{i, i}}
	}
	first := diffText(Compare(old, new))
	for i := 0; i < 20; i++ {
		if got := diffText(Compare(old, new)); got != first {
			t.Fatalf("run %d differs:\n%s\nvs\n%s", i, got, first)
		}
	}
	d := Compare(old, new)
	for i := 1; i < len(d); i++ {
		if comparePaths(d[i-1].Path, d[i].Path) >= 0 {
			t.Fatalf("not sorted: %s before %s", d[i-1].Path, d[i].Path)
		}
	}
}

func TestCompareUnsupportedValuesDoNotPanic(t *testing.T) {
	ch := make(chan int)
	d := Compare(map[string]any{"c": ch, "f": 1.0}, map[string]any{"c": ch, "f": 1.0})
	if len(d) != 0 {
		t.Errorf("same channel: got %v", d)
	}
	nan := map[string]any{"x": nanValue()}
	if d := Compare(nan, nan); len(d) != 1 {
		t.Errorf("NaN never equals itself: got %v", d)
	}
}

func TestEqualAllocatesNothing(t *testing.T) {
	a := obj(t, `{"a":{"b":[1,2,{"c":"d"}]},"e":true,"f":null}`)
	b := obj(t, `{"a":{"b":[1,2,{"c":"d"}]},"e":true,"f":null}`)
	c, _ := NewComparer(&CompareOptions{Ignore: []string{"a.x"}, ListKeys: map[string]string{"b": "c"}})
	if n := testing.AllocsPerRun(100, func() { _ = c.Compare(a, b) }); n != 0 {
		t.Errorf("Compare of equal inputs: %v allocations, want 0", n)
	}
	if !Equal(a, b) || Equal(a, obj(t, `{}`)) {
		t.Error("Equal: wrong answer")
	}
}

func TestChangeString(t *testing.T) {
	got := Change{Op: OpChange, Path: MustParsePath("a"), Old: make(chan int), New: 1}.String()
	if !strings.HasPrefix(got, "change a: 0x") {
		t.Errorf("unencodable value: got %q", got)
	}
	if Diff(nil).String() != "" {
		t.Error("empty diff should print nothing")
	}
	if !reflect.DeepEqual(Compare(nil, nil), Diff(nil)) {
		t.Error("Compare(nil, nil) should be nil")
	}
}

// TestIgnoredContentAlone: a map or list that appears, disappears or
// changes type holding nothing but ignored content is no change, and the
// values of changes leave ignored content out.
func TestIgnoredContentAlone(t *testing.T) {
	c, err := NewComparer(&CompareOptions{
		Ignore:   []string{`metadata.annotations["opbus.dev/record"]`, "status.conditions[type=Ready]"},
		ListKeys: map[string]string{"conditions": "type"},
	})
	must(t, err)
	base := obj(t, `{"metadata":{"name":"a"},"spec":{"x":1}}`)
	tests := []struct {
		name, new string
		want      string
	}{
		{"annotations appear holding only the record", `{"metadata":{"name":"a","annotations":{"opbus.dev/record":"r"}},"spec":{"x":1}}`, ""},
		{"conditions appear holding only Ready", `{"metadata":{"name":"a"},"spec":{"x":1},"status":{"conditions":[{"type":"Ready","status":"True"}]}}`, ""},
		{"a real annotation with the record", `{"metadata":{"name":"a","annotations":{"opbus.dev/record":"r","team":"x"}},"spec":{"x":1}}`,
			`add metadata.annotations = {"team":"x"}`},
		{"an empty map is content", `{"metadata":{"name":"a","annotations":{}},"spec":{"x":1}}`, `add metadata.annotations = {}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := obj(t, tt.new)
			if got := diffText(c.Compare(base, n)); got != tt.want {
				t.Errorf("Compare = %q, want %q", got, tt.want)
			}
			if got := diffText(c.Compare(n, base)); (got == "") != (tt.want == "") {
				t.Errorf("reverse Compare = %q", got)
			}
			d1, err := digestOf(c, base, nil, "")
			must(t, err)
			d2, err := digestOf(c, n, nil, "")
			must(t, err)
			if (d1 == d2) != (tt.want == "") {
				t.Errorf("whole-object digests equal: %v, want %v", d1 == d2, tt.want == "")
			}
			f1, _ := digestOf(c, base, []Path{MustParsePath("metadata.annotations")}, "")
			f2, _ := digestOf(c, n, []Path{MustParsePath("metadata.annotations")}, "")
			if strings.Contains(tt.name, "annotations appear") && f1 != f2 {
				t.Error("a field holding only ignored content digests unlike an absent one")
			}
		})
	}
	stripped := c.stripped(obj(t, `{"metadata":{"annotations":{"opbus.dev/record":"r"}},"a":1}`).(map[string]any))
	if jsonText(stripped) != `{"a":1}` {
		t.Errorf("Strip = %s", jsonText(stripped))
	}
}
