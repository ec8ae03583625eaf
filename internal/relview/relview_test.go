package relview

import (
	"crypto/sha256"
	"fmt"
	"testing"
)

// TestSumCarries checks that Add and Sub carry across the 64-bit words
// and wrap modulo 2^256, and that Sub undoes Add.
func TestSumCarries(t *testing.T) {
	max := Sum{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
	s := max
	s.Add(Sum{0, 0, 0, 1})
	if s != (Sum{}) {
		t.Fatalf("max+1 = %v, want 0", s)
	}
	s.Sub(Sum{0, 0, 0, 1})
	if s != max {
		t.Fatalf("0-1 = %v, want max", s)
	}
	a := Sum{0, 0, 1, ^uint64(0)}
	a.Add(Sum{0, 0, 0, 1})
	if a != (Sum{0, 0, 2, 0}) {
		t.Fatalf("carry: %v", a)
	}
	b := SumOf(sha256.Sum256([]byte("x")))
	c := b
	c.Add(SumOf(sha256.Sum256([]byte("y"))))
	c.Sub(SumOf(sha256.Sum256([]byte("y"))))
	if c != b {
		t.Fatalf("Sub does not undo Add: %v != %v", c, b)
	}
}

// TestSumOfBigEndian checks that SumOf reads the bytes big-endian, most
// significant word first.
func TestSumOfBigEndian(t *testing.T) {
	var h [32]byte
	h[0], h[31] = 0x01, 0x02
	if s := SumOf(h); s != (Sum{1 << 56, 0, 0, 2}) {
		t.Fatalf("SumOf = %v", s)
	}
}

// share is a test share: a digest of the key and the doc's "v", zero in
// field 1 for odd keys (the field does not match them).
func share(k int, doc map[string]any) func(int) Sum {
	return func(j int) Sum {
		if j == 1 && k%2 == 1 {
			return Sum{}
		}
		return SumOf(sha256.Sum256(fmt.Appendf(nil, "%d/%d/%v", j, k, doc["v"])))
	}
}

// want recomputes the sums of field j from scratch.
func want(j int, docs map[int]map[string]any) Sum {
	var s Sum
	for k, doc := range docs {
		s.Add(share(k, doc)(j))
	}
	return s
}

// TestSetKeepsSums adds, changes and removes entries past the slice to
// map threshold and checks after each step that the sums, the kind maps
// and Doc agree with a recomputation from scratch.
func TestSetKeepsSums(t *testing.T) {
	v := New[int](2)
	docs := map[int]map[string]any{}
	set := func(k int, doc map[string]any) {
		t.Helper()
		kind := fmt.Sprint("K", k%3)
		name := fmt.Sprint("n", k)
		before := docs[k]
		if old := v.Set(k, kind, name, doc, share(k, doc)); (old == nil) != (before == nil) || (old != nil && old["v"] != before["v"]) {
			t.Fatalf("Set %d returned %v, want the state before, %v", k, old, before)
		}
		if doc == nil {
			delete(docs, k)
		} else {
			docs[k] = doc
		}
		for j := range 2 {
			if got := v.Sum(j); got != want(j, docs) {
				t.Fatalf("after set %d: sum %d = %v, want %v", k, j, got, want(j, docs))
			}
		}
		for kk, d := range docs {
			if v.Doc(kk)["v"] != d["v"] {
				t.Fatalf("Doc(%d) = %v, want %v", kk, v.Doc(kk), d)
			}
			if got := v.ByKind(fmt.Sprint("K", kk%3))[fmt.Sprint("n", kk)]; got == nil {
				t.Fatalf("entry %d missing from its kind", kk)
			}
		}
		if v.Doc(k) != nil && doc == nil {
			t.Fatalf("Doc(%d) after removal = %v", k, v.Doc(k))
		}
		if v.Empty() != (len(docs) == 0) {
			t.Fatalf("Empty = %v with %d entries", v.Empty(), len(docs))
		}
	}
	for k := range 3 * manyEntries {
		set(k, map[string]any{"v": k})
	}
	for k := range 3 * manyEntries {
		set(k, map[string]any{"v": -k})
	}
	set(1000, nil) // removing an absent entry changes nothing
	for k := range 3 * manyEntries {
		set(k, nil)
	}
	if v.ByKind("K0") != nil || len(v.Root(nil)) != 0 {
		t.Fatalf("kinds left in an empty view: %v", v.Root(nil))
	}
	if v.Sum(0) != (Sum{}) || v.Sum(1) != (Sum{}) {
		t.Fatalf("sums of an empty view: %v %v", v.Sum(0), v.Sum(1))
	}
}

// TestRootNames checks that Root maps each other name of a kind to that
// kind's map, unless the other name is a kind of the view itself.
func TestRootNames(t *testing.T) {
	v := New[string](0)
	none := func(int) Sum { return Sum{} }
	v.Set("a", "Pod", "a", map[string]any{}, none)
	v.Set("b", "pods", "b", map[string]any{}, none)
	root := v.Root(map[string]string{"po": "Pod", "pods": "Pod", "svc": "Service"})
	if _, ok := root["po"].(map[string]any)["a"]; !ok {
		t.Fatalf("po does not name Pod's map: %v", root)
	}
	if _, ok := root["pods"].(map[string]any)["b"]; !ok {
		t.Fatalf("pods, a kind of the view, was replaced: %v", root)
	}
	if _, ok := root["svc"]; ok {
		t.Fatalf("svc names a kind with no entry: %v", root)
	}
	var nilView *View[string]
	if nilView.Sum(0) != (Sum{}) {
		t.Fatal("nil view's sum is not zero")
	}
	if r := nilView.Root(map[string]string{"po": "Pod"}); r == nil || len(r) != 0 {
		t.Fatalf("nil view's Root = %v, want an empty map", r)
	}
}

// TestSumAppend checks that Append writes the bytes SumOf reads.
func TestSumAppend(t *testing.T) {
	h := sha256.Sum256([]byte("x"))
	b := SumOf(h).Append([]byte{9})
	if len(b) != 33 || b[0] != 9 || [32]byte(b[1:]) != h {
		t.Fatalf("Append = %x, want 09 then %x", b, h)
	}
}

// TestWith checks what a handler sees: copies with the view's root under
// the field, the state before as the state now when only related objects
// changed, and no state before when there is none.
func TestWith(t *testing.T) {
	now, old := map[string]any{"a": 1}, map[string]any{"a": 0}
	root := map[string]any{"K": map[string]any{}}
	n, o := With("related", root, now, old, false)
	if len(now) != 1 || len(old) != 1 {
		t.Fatalf("With changed its arguments: %v %v", now, old)
	}
	if n["a"] != 1 || o["a"] != 0 || fmt.Sprint(n["related"]) != fmt.Sprint(root) || fmt.Sprint(o["related"]) != fmt.Sprint(root) {
		t.Fatalf("With = %v, %v", n, o)
	}
	_, o = With("related", root, now, old, true)
	if o["a"] != 1 || o["related"] == nil {
		t.Fatalf("same: old = %v, want the new state with the view", o)
	}
	if _, o = With("related", root, now, nil, false); o != nil {
		t.Fatalf("no old state: old = %v", o)
	}
}
