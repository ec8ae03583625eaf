package jsonvalue

import (
	"encoding/json"
	"testing"
)

// TestEqualAcrossNumberTypes checks the package's first invariant: numbers
// compare by value whatever their Go type, integers exactly at any size.
func TestEqualAcrossNumberTypes(t *testing.T) {
	for _, tc := range []struct {
		a, b any
		want bool
	}{
		{3, int64(3), true},
		{3.0, json.Number("3"), true},
		{uint64(1 << 63), json.Number("9223372036854775808"), true},
		{json.Number("9223372036854775808"), json.Number("9223372036854775809"), false},
		{3.5, int64(3), false},
		{"3", 3, false},
		{map[string]any{"a": []any{1, "x"}}, map[string]any{"a": []any{1.0, "x"}}, true},
	} {
		if got := Equal(tc.a, tc.b); got != tc.want {
			t.Errorf("Equal(%#v, %#v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestNestingBound checks that a value that contains itself ends the walks.
func TestNestingBound(t *testing.T) {
	m := map[string]any{}
	m["self"] = m
	if Equal(m, m) {
		t.Error("Equal of a map that contains itself: got true, want false")
	}
	if Plain(m, 0) {
		t.Error("Plain of a map that contains itself: got true, want false")
	}
}

// TestKeyedLists checks the list key readers on distinct, duplicate and
// missing keys.
func TestKeyedLists(t *testing.T) {
	l := []any{map[string]any{"name": "a"}, map[string]any{"name": 2}}
	if !Keyable(l, "name") || HasDuplicateKeys(l, "name") {
		t.Errorf("Keyable/HasDuplicateKeys of %v: want keyable, no duplicates", l)
	}
	if k, ok := ElementKey(l[1], "name"); !ok || k != "2" {
		t.Errorf("ElementKey = %q, %v, want \"2\", true", k, ok)
	}
	dup := []any{map[string]any{"name": 1}, map[string]any{"name": 1.0}}
	if !HasDuplicateKeys(dup, "name") || SameDistinctKeys(dup, dup, "name") {
		t.Errorf("%v: want duplicate keys", dup)
	}
	if Keyable([]any{map[string]any{}}, "name") {
		t.Error("a list with a missing key: got keyable")
	}
}

// TestPlainNumbers checks the conversion Document applies.
func TestPlainNumbers(t *testing.T) {
	got := PlainNumbers(map[string]any{"i": json.Number("3"), "u": json.Number("18446744073709551615"),
		"b": json.Number("123456789012345678901234"), "f": json.Number("2.5")}).(map[string]any)
	if got["i"] != int64(3) || got["u"] != uint64(18446744073709551615) ||
		got["b"] != json.Number("123456789012345678901234") || got["f"] != 2.5 {
		t.Errorf("PlainNumbers = %#v", got)
	}
}
