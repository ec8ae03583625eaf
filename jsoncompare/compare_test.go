package jsoncompare

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/opbus/opbus"
)

// docOf decodes a JSON text as opbus.Document does (integers as int64,
// …), and fails on anything after the value, as Compare does.
func docOf(data []byte) (any, error) {
	if !json.Valid(data) {
		return nil, fmt.Errorf("not one JSON value")
	}
	m, err := opbus.Document(map[string]any{"v": json.RawMessage(data)})
	if err != nil {
		return nil, err
	}
	return m["v"], nil
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// checkCompareJSON holds c.Compare(x, y) to opbus's Comparer.Compare of
// the decoded texts, with the same options, and to an error naming the
// side that does not decode.
func checkCompareJSON(t *testing.T, c *Comparer, x, y []byte) {
	t.Helper()
	got, err := c.Compare(x, y)
	a, errA := docOf(x)
	b, errB := docOf(y)
	switch {
	case errA != nil || errB != nil:
		if err == nil {
			t.Fatalf("Compare(%q, %q): no error, want one (old: %v, new: %v)", x, y, errA, errB)
		}
		if errA == nil && !strings.Contains(err.Error(), "new JSON") || errB == nil && !strings.Contains(err.Error(), "old JSON") {
			t.Fatalf("Compare(%q, %q): error %q names the wrong side (old: %v, new: %v)", x, y, err, errA, errB)
		}
	case err != nil:
		t.Fatalf("Compare(%q, %q): %v, want the diff of two valid texts", x, y, err)
	default:
		if want := c.cmp.Compare(a, b); !reflect.DeepEqual(got, want) {
			t.Fatalf("Compare(%s, %s):\n%s\nwant opbus.Comparer.Compare's\n%s", x, y, got, want)
		}
	}
}

// jsonComparers are the settings the equivalence tests run with: defaults,
// ignored paths, list keys by name and anchored, and patterns by index.
func jsonComparers(t testing.TB) []*Comparer {
	c, err := NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"b.c", "metadata.resourceVersion", "l[*].a"},
		ListKeys: map[string]string{"containers": "name", "spec.ports": "port"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// patterns by index and by element key, and list keys below a list
	byIndex, err := NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"l[1]", "[0].c", "a[2][*].b", `containers[name="x"].a`},
		ListKeys: map[string]string{"l[*].l": "name", "[1].containers": "a"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return []*Comparer{defaultComparer, c, byIndex}
}

func TestCompareJSONCases(t *testing.T) {
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"equal bytes", `{"a":[1,{"b":"x"}]}`, `{"a":[1,{"b":"x"}]}`, nil},
		{"equal, other whitespace and order", `{"a":1, "b":[1, 2]}`, "{\"b\":[1,2],\n\"a\":1}", nil},
		{"numbers by value", `{"a":1,"b":[2.0]}`, `{"a":1.0,"b":[2]}`, nil},
		{"a number is not the start of a longer one", `{"a":12}`, `{"a":123}`, []string{"change a: 12 → 123"}},
		{"escaped strings by value", `{"a":"x","\u0062":"é"}`, `{"\u0061":"\u0078","b":"\u00e9"}`, nil},
		{"the last of a repeated key counts", `{"a":1,"a":2}`, `{"a":3,"a":2}`, nil},
		{"a repeated key changed", `{"a":1,"a":2}`, `{"a":2,"a":1}`, []string{"change a: 2 → 1"}},
		{"changes in key order", `{"z":1,"m":{"y":true,"x":null},"a":"s"}`, `{"z":2,"m":{"y":false,"x":[]},"a":"t"}`,
			[]string{`change a: "s" → "t"`, "change m.x: null → []", "change m.y: true → false", "change z: 1 → 2"}},
		{"added and removed keys", `{"a":1,"b":{"c":2}}`, `{"b":{"d":3},"e":[1]}`,
			[]string{"remove a (was 1)", "remove b.c (was 2)", "add b.d = 3", "add e = [1]"}},
		{"list by index", `[1,{"a":1},[2],"x"]`, `[1,{"a":2},[2,3]]`,
			[]string{"change [1].a: 1 → 2", "add [2][1] = 3", `remove [3] (was "x")`}},
		{"change of type", `{"a":{"b":1}}`, `{"a":[1]}`, []string{`change a: {"b":1} → [1]`}},
		{"scalars at the root", `1`, ` "1" `, []string{`change (root): 1 → "1"`}},
		{"big numbers", `{"a":9007199254740993,"b":1e400}`, `{"a":9007199254740992,"b":1e400}`,
			[]string{"change a: 9007199254740993 → 9007199254740992"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Compare([]byte(tt.old), []byte(tt.new))
			if err != nil {
				t.Fatal(err)
			}
			if g, w := got.String(), strings.Join(tt.want, "\n"); g != w {
				t.Fatalf("got\n%s\nwant\n%s", g, w)
			}
			for _, c := range jsonComparers(t) {
				checkCompareJSON(t, c, []byte(tt.old), []byte(tt.new))
			}
		})
	}
}

func TestCompareJSONOptions(t *testing.T) {
	c := jsonComparers(t)[1]
	old := `{"metadata":{"resourceVersion":"1","name":"p"},"b":{"c":1,"d":1},
		"spec":{"containers":[{"name":"a","image":"1"},{"name":"b","image":"2"}],"ports":[{"port":80,"x":1}]}}`
	new := `{"metadata":{"resourceVersion":"2","name":"p"},"b":{"c":2,"d":1},
		"spec":{"containers":[{"name":"b","image":"3"},{"name":"a","image":"1"}],"ports":[{"port":80,"x":2}]}}`
	got, err := c.Compare([]byte(old), []byte(new))
	if err != nil {
		t.Fatal(err)
	}
	want := `change spec.containers[name=b].image: "2" → "3"` + "\n" + `change spec.ports[port=80].x: 1 → 2`
	if g := got.String(); g != want {
		t.Fatalf("got\n%s\nwant\n%s", g, want)
	}
	checkCompareJSON(t, c, []byte(old), []byte(new))
}

func TestCompareJSONErrors(t *testing.T) {
	tests := []struct {
		old, new string
		want     string
	}{
		{``, `{}`, "old JSON: unexpected end of input"},
		{`{}`, `{"a":}`, `new JSON: invalid character '}' at byte 5: want a value`},
		{`{"a":1}`, `{"a":1}x`, `new JSON: invalid character 'x' at byte 7: want the end of the document`},
		{`{"a":1}x`, `{"a":1}x`, `old JSON: invalid character 'x' at byte 7`},
		{`{"a":01}`, `{"a":1}`, `old JSON: invalid character '1' at byte 6: want ',' or '}'`},
		{`{"a":[1,]}`, `{"a":[2]}`, `old JSON: invalid character ']' at byte 8: want a value`},
		{`{"a":"x"}`, "{\"a\":\"x\ty\"}", `new JSON: invalid character '\t' at byte 7: control characters must be escaped`},
		{`{"a":"\q"}`, `{}`, `old JSON: invalid character 'q' at byte 7: want an escape`},
		{`{"a":tru}`, `{}`, `old JSON: invalid character '}' at byte 8: want true`},
		{`{"a":1,"b":2}`, `{"a":1,"b":2,}`, `new JSON: invalid character '}' at byte 13: want a string key`},
		{`[1]`, `[1 2]`, `new JSON: invalid character '2' at byte 3: want ',' or ']' after a list element`},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), `[]`, "old JSON: invalid character '[' at byte 10000: nested past 10000 levels"},
	}
	for _, tt := range tests {
		d, err := Compare([]byte(tt.old), []byte(tt.new))
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Compare(%q, %q) = %v, %v; want an error with %q", tt.old, tt.new, d, err, tt.want)
		}
		if d != nil {
			t.Errorf("Compare(%q, %q): a diff %v beside the error", tt.old, tt.new, d)
		}
	}
}

// TestCompareJSONFixtures compares the Pods and the big and deep documents
// both ways, and their own copies.
func TestCompareJSONFixtures(t *testing.T) {
	for _, pair := range [][2]string{{"pod-old", "pod-new"}, {"pod-old", "pod-annotated"}, {"big-old", "big-new"}, {"deep-old", "deep-new"}} {
		x, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", pair[0]+".json"))
		must(t, err)
		y, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", pair[1]+".json"))
		must(t, err)
		for _, c := range jsonComparers(t) {
			checkCompareJSON(t, c, x, y)
			checkCompareJSON(t, c, y, x)
			checkCompareJSON(t, c, x, bytes.Clone(x))
		}
		if d, _ := Compare(x, y); len(d) == 0 {
			t.Errorf("%s → %s: no change found", pair[0], pair[1])
		}
	}
}

// TestCompareJSONAllocations: equal texts allocate nothing, and a change
// in a Pod allocates for that change, not for the Pod.
func TestCompareJSONAllocations(t *testing.T) {
	x, err := os.ReadFile(filepath.Join("..", "testdata", "fixtures", "pod-old.json"))
	must(t, err)
	y := bytes.Clone(x)
	if n := testing.AllocsPerRun(20, func() { _, _ = Compare(x, y) }); n != 0 {
		t.Errorf("equal Pods: %.0f allocations, want 0", n)
	}
	if raceEnabled {
		// sync.Pool drops walkers at random under the race detector;
		// scripts/test runs this test again without it.
		return
	}
	z := bytes.Replace(x, []byte(`"resourceVersion": "`), []byte(`"resourceVersion": "9`), 1)
	if bytes.Equal(z, x) {
		t.Fatal("fixture has no resourceVersion")
	}
	if n := testing.AllocsPerRun(20, func() { _, _ = Compare(x, z) }); n > 10 {
		t.Errorf("one change in a Pod: %.0f allocations, want at most 10", n)
	}
}

// TestCompareJSONMatchesCompare runs random documents and mutations of them,
// written with random whitespace and key order, through Compare and opbus's
// Compare.
func TestCompareJSONMatchesCompare(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	comparers := jsonComparers(t)
	for i := range 3000 {
		a := randJSON(r, 0)
		b := mutateJSON(r, a, 0)
		x, y := a.text(r), b.text(r)
		if i%50 == 0 { // a few broken texts
			y = breakJSON(r, y)
		}
		for _, c := range comparers {
			checkCompareJSON(t, c, x, y)
		}
	}
}

// jv is a generated JSON value: a scalar's text, or the members of an
// object (keys may repeat) or the elements of a list.
type jv struct {
	lit  string
	keys []string // object keys, as JSON string literals
	vals []jv
	list bool
}

var (
	jsonKeys    = []string{`"a"`, `"b"`, `"c"`, `"\u0061"`, `"name"`, `"containers"`, `"spec"`, `"ports"`, `"port"`, `"l"`, `"metadata"`, `"resourceVersion"`, `"é"`}
	jsonScalars = []string{`1`, `1.0`, `-0`, `12`, `123`, `1e2`, `100`, `18446744073709551615`, `1e400`, `true`, `false`, `null`,
		`"x"`, `"\u0078"`, `""`, `"a\nb"`, `"é"`, `"\ud800"`, `"\ufffd"`, `"1"`, `"name"`}
)

func randJSON(r *rand.Rand, depth int) jv {
	switch n := r.IntN(10); {
	case depth > 4 || n < 4:
		return jv{lit: jsonScalars[r.IntN(len(jsonScalars))]}
	case n < 7:
		v := jv{}
		for range r.IntN(6) {
			v.keys = append(v.keys, jsonKeys[r.IntN(len(jsonKeys))])
			v.vals = append(v.vals, randJSON(r, depth+1))
		}
		return v
	default:
		v := jv{list: true}
		for range r.IntN(5) {
			v.vals = append(v.vals, randJSON(r, depth+1))
		}
		return v
	}
}

// mutateJSON returns a copy of v with a few random changes, or none.
func mutateJSON(r *rand.Rand, v jv, depth int) jv {
	if r.IntN(12) == 0 {
		return randJSON(r, depth) // replaced
	}
	if v.lit != "" {
		if r.IntN(4) == 0 {
			return jv{lit: jsonScalars[r.IntN(len(jsonScalars))]}
		}
		return v
	}
	out := jv{list: v.list, keys: slices.Clone(v.keys)}
	for _, e := range v.vals {
		out.vals = append(out.vals, mutateJSON(r, e, depth+1))
	}
	switch r.IntN(6) {
	case 0: // add
		if !out.list {
			out.keys = append(out.keys, jsonKeys[r.IntN(len(jsonKeys))])
		}
		out.vals = append(out.vals, randJSON(r, depth+1))
	case 1: // remove
		if n := len(out.vals); n > 0 {
			i := r.IntN(n)
			out.vals = slices.Delete(out.vals, i, i+1)
			if !out.list {
				out.keys = slices.Delete(out.keys, i, i+1)
			}
		}
	case 2: // reorder an object's members
		if !out.list && len(out.vals) > 1 {
			i, j := r.IntN(len(out.vals)), r.IntN(len(out.vals))
			out.vals[i], out.vals[j] = out.vals[j], out.vals[i]
			out.keys[i], out.keys[j] = out.keys[j], out.keys[i]
		}
	}
	return out
}

// text writes v, with whitespace here and there.
func (v jv) text(r *rand.Rand) []byte {
	var buf bytes.Buffer
	v.write(&buf, r)
	return buf.Bytes()
}

func (v jv) write(buf *bytes.Buffer, r *rand.Rand) {
	space := func() {
		if r.IntN(8) == 0 {
			buf.WriteString([]string{" ", "\n", "\t ", "\r\n"}[r.IntN(4)])
		}
	}
	space()
	defer space()
	if v.lit != "" {
		buf.WriteString(v.lit)
		return
	}
	open, closer := byte('{'), byte('}')
	if v.list {
		open, closer = '[', ']'
	}
	buf.WriteByte(open)
	for i, e := range v.vals {
		if i > 0 {
			buf.WriteByte(',')
		}
		if !v.list {
			space()
			buf.WriteString(v.keys[i])
			space()
			buf.WriteByte(':')
		}
		e.write(buf, r)
	}
	space()
	buf.WriteByte(closer)
}

const breakers = `{}[]:,"\ 1x`

// breakJSON damages a text: a byte dropped, changed or added.
func breakJSON(r *rand.Rand, y []byte) []byte {
	y = bytes.Clone(y)
	i := r.IntN(len(y) + 1)
	switch r.IntN(3) {
	case 0:
		if i < len(y) {
			return slices.Delete(y, i, i+1)
		}
	case 1:
		if i < len(y) {
			y[i] = breakers[r.IntN(len(breakers))]
			return y
		}
	}
	return slices.Insert(y, i, breakers[r.IntN(len(breakers))])
}

// FuzzCompareJSON holds Compare to opbus's Compare of the decoded texts.
func FuzzCompareJSON(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[1,2]}`), []byte(`{"a":2,"b":[1]}`))
	f.Add([]byte(`{"a":1,"a":2}`), []byte(`{"\u0061":2.0}`))
	f.Add([]byte(`[12,"x"]`), []byte(`[123,"\u0078"]`))
	f.Add([]byte(`{"spec":{"containers":[{"name":"a","image":"1"}]}}`), []byte(`{"spec":{"containers":[{"name":"a","image":"2"},{"name":"b"}]}}`))
	f.Fuzz(func(t *testing.T, x, y []byte) {
		for _, c := range jsonComparers(t) {
			checkCompareJSON(t, c, x, y)
		}
	})
}

// Adversarial shapes for Compare, each of whose time was once many
// times encoding/json's (BenchmarkCompareJSONShapes measures them against
// it): a repeated key at the root whose first member new repeats, a change
// at the bottom of a document nested 3,000 deep with padding at every
// level, and a long list.
func jsonShapes() []struct {
	name     string
	old, new []byte
} {
	deep := func(leaf, pad string) string {
		return strings.Repeat(`{"a":`, 3000) + leaf + strings.Repeat(pad+`}`, 3000)
	}
	after := `,"p":"` + strings.Repeat("x", 90) + `"`
	before := func(leaf string) string {
		return strings.Repeat(`{"p":"`+strings.Repeat("x", 90)+`","a":`, 3000) + leaf + strings.Repeat(`}`, 3000)
	}
	return []struct {
		name     string
		old, new []byte
	}{
		{"repeated-key-deep", []byte(`{"k":` + deep("1", after) + `,"k":` + deep("2", after) + `}`), []byte(`{"k":` + deep("1", after) + `,"z":[]}`)},
		{"deep-padded", []byte(before("1")), []byte(before("2"))},
		{"long-list", []byte("[" + strings.Repeat("1,", 1<<17) + "1]"), []byte("[" + strings.Repeat("1,", 1<<17) + "2]")},
	}
}

func TestCompareJSONShapes(t *testing.T) {
	for _, s := range jsonShapes() {
		t.Run(s.name, func(t *testing.T) {
			checkCompareJSON(t, defaultComparer, s.old, s.new)
			checkCompareJSON(t, defaultComparer, s.new, s.old)
			if d, err := Compare(s.old, s.new); err != nil || len(d) == 0 {
				t.Fatalf("Compare = %v, %v; want changes", d, err)
			}
		})
	}
}

// A pooled walker keeps no huge scratch after a huge call.
func TestCompareJSONDropsHugeScratch(t *testing.T) {
	var sb strings.Builder
	for i := range 1 << 16 {
		fmt.Fprintf(&sb, `"k%d":[{"a":1}],`, i)
	}
	big1 := []byte(`{` + sb.String() + `"last":1}`)
	big2 := []byte(`{` + sb.String() + `"last":2}`)
	// A walker of its own, not the pool's: under -race the pool drops
	// what it is given at random, and would hand out fresh walkers.
	w := &walker{}
	a, b := jsonDoc{data: big1, side: "old"}, jsonDoc{data: big2, side: "new"}
	d, err := w.compare(defaultComparer, &a, &b, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(d) != 1 {
		t.Fatalf("compareJSON = %v, want one change", d)
	}
	grown := cap(w.mem) + cap(w.ends[0]) + cap(w.ends[1]) + cap(w.ord)
	if grown <= maxKept {
		t.Fatalf("the walker's scratch is %d elements after a 65,537-member object, want past maxKept (%d): the test no longer makes it grow", grown, maxKept)
	}
	w.trim()
	if cap(w.mem) > maxKept || cap(w.ord) > maxKept || cap(w.ends[0]) > maxKept || cap(w.ends[1]) > maxKept || len(w.mem) != 0 || w.memTop != 0 {
		t.Errorf("a trimmed walker keeps mem %d/%d, ord %d, ends %d, %d", len(w.mem), cap(w.mem), cap(w.ord), cap(w.ends[0]), cap(w.ends[1]))
	}
}

// BenchmarkCompareJSONShapes: Compare on the adversarial shapes, and
// encoding/json decoding both texts, for scale.
func BenchmarkCompareJSONShapes(b *testing.B) {
	for _, s := range jsonShapes() {
		b.Run(s.name+"/comparejson", func(b *testing.B) {
			for b.Loop() {
				if _, err := Compare(s.old, s.new); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(s.name+"/unmarshal", func(b *testing.B) {
			for b.Loop() {
				var x, y any
				if json.Unmarshal(s.old, &x) != nil || json.Unmarshal(s.new, &y) != nil {
					b.Fatal("bad shape")
				}
			}
		})
	}
}

// From JSON text, an integer past uint64 stays exact: Compare keeps it as
// a json.Number, as opbus.Document does.
func TestJSONBigIntegers(t *testing.T) {
	old := []byte(`{"n": 123456789012345678901234567890, "u": 18446744073709551615}`)
	new := []byte(`{"n": 123456789012345678901234567891, "u": 18446744073709551615}`)
	d, err := Compare(old, new)
	must(t, err)
	if len(d) != 1 || d[0].Path.String() != "n" {
		t.Fatalf("Compare = %v, want one change at n", d)
	}
	if got, want := d[0].New, json.Number("123456789012345678901234567891"); got != want {
		t.Errorf("change's New = %T %v, want %T %v", got, got, want, want)
	}
}

// TestNewComparerErrors: the options are checked as opbus.NewComparer
// checks them, with its errors.
func TestNewComparerErrors(t *testing.T) {
	for _, opts := range []*opbus.CompareOptions{
		{Ignore: []string{"a..b"}},
		{ListKeys: map[string]string{"spec.ports": ""}},
	} {
		_, err := NewComparer(opts)
		_, want := opbus.NewComparer(opts)
		if err == nil || want == nil || err.Error() != want.Error() {
			t.Errorf("NewComparer(%+v) = %v, want opbus.NewComparer's %v", opts, err, want)
		}
	}
}
