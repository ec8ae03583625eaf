package opbus

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Integers past the int64 range compare exactly: two such values one apart
// were once both read as the same float64, so a change between them was
// neither in the Diff nor in the digest that decides whether a handler runs.
func TestEqualBigIntegers(t *testing.T) {
	cases := []struct {
		a, b any
		want bool
	}{
		{uint64(math.MaxUint64), uint64(math.MaxUint64 - 1), false},
		{uint64(math.MaxUint64), uint64(math.MaxUint64), true},
		{uint64(math.MaxUint64), json.Number("18446744073709551615"), true},
		{json.Number("18446744073709551617"), json.Number("18446744073709551616"), false},
		{json.Number("123456789012345678901234567890"), json.Number("123456789012345678901234567890"), true},
		{json.Number("-9223372036854775809"), json.Number("-9223372036854775810"), false},
		{json.Number("-9223372036854775809"), json.Number("-09223372036854775809"), true},
		// A float64 that large is integral: it equals the integer of its
		// exact value, and no other.
		{uint64(1 << 63), float64(1 << 63), true},
		{uint64(math.MaxUint64), float64(1 << 64), false},
		{json.Number("18446744073709551616"), float64(1 << 64), true},
		{json.Number("1e30"), 1e30, true},
		{json.Number("1e2"), int64(100), true},
		{uint64(1 << 63), int64(math.MaxInt64), false},
		{json.Number("99999999999999999999"), 1.5, false},
		{json.Number("99999999999999999999"), "99999999999999999999", false},
	}
	for _, c := range cases {
		if got := Equal(c.a, c.b); got != c.want {
			t.Errorf("Equal(%T %v, %T %v) = %v, want %v", c.a, c.a, c.b, c.b, got, c.want)
		}
		if got := Equal(c.b, c.a); got != c.want {
			t.Errorf("Equal(%T %v, %T %v) = %v, want %v", c.b, c.b, c.a, c.a, got, c.want)
		}
		d := Compare(map[string]any{"n": c.a}, map[string]any{"n": c.b})
		if (len(d) == 0) != c.want {
			t.Errorf("Compare(n: %T %v → %T %v) = %v, want equal %v", c.a, c.a, c.b, c.b, d, c.want)
		}
	}
}

// A handler subscribed to a field holding a large uint64 runs when it
// changes by one.
func TestDispatchSeesBigIntegerChange(t *testing.T) {
	b := newBus(t, nil)
	var r recorder
	must(t, b.Handle("size", r.handle, On{Fields: []string{"spec.size"}}))
	key := Key{Kind: "Volume", Name: "v"}
	ctx := context.Background()
	for i, n := range []any{uint64(math.MaxUint64 - 1), uint64(math.MaxUint64), json.Number("18446744073709551615"), json.Number("18446744073709551616")} {
		must(t, b.Dispatch(ctx, key, map[string]any{"spec": map[string]any{"size": n}}))
		want := []int{1, 2, 2, 3}[i] // the json.Number of the same value is no change
		if got := r.count(); got != want {
			t.Fatalf("after spec.size = %T %v: handler ran %d times, want %d", n, n, got, want)
		}
	}
}

// Keyed lists keyed by large integers keep their elements apart.
func TestCompareKeyedByBigIntegers(t *testing.T) {
	c, err := NewComparer(&CompareOptions{ListKeys: map[string]string{"items": "id"}})
	must(t, err)
	old := map[string]any{"items": []any{
		map[string]any{"id": uint64(math.MaxUint64 - 1), "v": "a"},
		map[string]any{"id": uint64(math.MaxUint64), "v": "b"},
	}}
	new := map[string]any{"items": []any{
		map[string]any{"id": uint64(math.MaxUint64), "v": "b"},
		map[string]any{"id": uint64(math.MaxUint64 - 1), "v": "a"},
	}}
	if d := c.Compare(old, new); len(d) != 0 {
		t.Errorf("reordering elements keyed by distinct large ids: %v, want no changes", d)
	}
}

// From JSON text, an integer past uint64 stays exact: Document keeps it as
// a json.Number (and so does jsoncompare: its TestJSONBigIntegers).
func TestJSONBigIntegers(t *testing.T) {
	new := []byte(`{"n": 123456789012345678901234567891, "u": 18446744073709551615}`)
	doc, err := Document(json.RawMessage(new))
	must(t, err)
	if got, want := doc["n"], json.Number("123456789012345678901234567891"); got != want {
		t.Errorf("Document: n = %T %v, want %T %v", got, got, want, want)
	}
	if got, want := doc["u"], uint64(math.MaxUint64); got != want {
		t.Errorf("Document: u = %T %v, want %T %v", got, got, want, want)
	}
}

// Decode reads large integers into the Go types that hold them, and says
// which do not.
func TestDecodeBigIntegers(t *testing.T) {
	var u uint64
	must(t, Decode(json.Number("18446744073709551615"), &u))
	if u != math.MaxUint64 {
		t.Errorf("Decode(json.Number MaxUint64) into uint64 = %d", u)
	}
	must(t, Decode(uint64(math.MaxUint64-1), &u))
	if u != math.MaxUint64-1 {
		t.Errorf("Decode(uint64 MaxUint64-1) into uint64 = %d", u)
	}
	if err := Decode(json.Number("18446744073709551616"), &u); err == nil {
		t.Errorf("Decode(2^64) into uint64 = %d, want an out-of-range error", u)
	}
	var i int64
	if err := Decode(uint64(math.MaxUint64), &i); err == nil {
		t.Errorf("Decode(MaxUint64) into int64 = %d, want an out-of-range error", i)
	}
	var f float64
	must(t, Decode(json.Number("123456789012345678901234567890"), &f))
	if f != 1.2345678901234568e29 {
		t.Errorf("Decode(long integer) into float64 = %v", f)
	}
	if err := Decode(json.Number("1"+strings.Repeat("0", 310)), &f); err == nil {
		t.Errorf("Decode(10^310) into float64 = %v, want an out-of-range error", f)
	}
}
