package opbus

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	stored "github.com/opbus/opbus/internal/record"
)

// TestSnapshotRoundTrip: every value Validate accepts comes back with the
// same Go type and value, where JSON would lose it.
func TestSnapshotRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		obj  map[string]any
	}{
		{"empty", map[string]any{}},
		{"nil document", nil},
		{"int64 above 2^53", map[string]any{"n": int64(1 << 60)}},
		{"uint64 max", map[string]any{"n": uint64(math.MaxUint64)}},
		{"invalid UTF-8", map[string]any{"s": "\xff\xfe", "\xff": "key too"}},
		{"NUL", map[string]any{"s": "a\x00b", "a\x00": nil}},
		{"scalars", map[string]any{"nil": nil, "t": true, "f": false, "s": "", "u": "ünï"}},
		{"every number type", map[string]any{
			"int": -1, "int8": int8(math.MinInt8), "int16": int16(math.MaxInt16), "int32": int32(math.MinInt32),
			"int64": int64(math.MinInt64), "uint": uint(math.MaxUint), "uint8": uint8(255), "uint16": uint16(65535),
			"uint32": uint32(math.MaxUint32), "uint64": uint64(0), "float32": float32(1.5), "float64": 0.1,
			"max": math.MaxFloat64, "small": math.SmallestNonzeroFloat64, "json": json.Number("12345678901234567890"),
			"jsonf": json.Number("1.5e3"),
		}},
		{"nil and empty containers", map[string]any{
			"nilmap": map[string]any(nil), "emptymap": map[string]any{},
			"nillist": []any(nil), "emptylist": []any{},
		}},
		{"nested", map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "app", "ports": []any{int64(80), uint16(443)}, "env": []any{nil, []any{"x"}}},
		}}}},
		{"deep", map[string]any{"d": nested(999)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := encodeSnapshot(tc.obj)
			if err != nil {
				t.Fatalf("encodeSnapshot: got %v, want nil", err)
			}
			got, err := decodeSnapshot(data)
			if err != nil {
				t.Fatalf("decodeSnapshot: got %v, want nil", err)
			}
			if !reflect.DeepEqual(got, tc.obj) {
				t.Errorf("got %#v, want %#v", got, tc.obj)
			}
			again, err := encodeSnapshot(got)
			if err != nil || !bytes.Equal(again, data) {
				t.Errorf("encoding again: got %x, %v, want %x", again, err, data)
			}
		})
	}
}

func TestSnapshotEncodeErrors(t *testing.T) {
	cyclic := map[string]any{}
	cyclic["self"] = cyclic
	tests := []struct {
		name string
		obj  map[string]any
		want string
	}{
		{"unsupported type", map[string]any{"a": []any{make(chan int)}}, "opbus: value at a[0]: unsupported type chan int"},
		{"NaN", map[string]any{"n": math.NaN()}, "opbus: value at n: not a finite number"},
		{"infinite float32", map[string]any{"n": float32(math.Inf(-1))}, "opbus: value at n: not a finite number"},
		{"bad json.Number", map[string]any{"j": json.Number("x")}, "opbus: value at j: not a valid JSON number"},
		{"contains itself", cyclic, "nested deeper than 1000 levels (a value that contains itself?)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := encodeSnapshot(tc.obj)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestSnapshotDecodeErrors(t *testing.T) {
	valid, err := encodeSnapshot(map[string]any{"a": "bc", "n": int64(1 << 40), "l": []any{1.5}})
	must(t, err)
	deep := []byte{stored.SnapshotVersion, 'm', 1, 1, 'x'}
	for range 1001 {
		deep = append(deep, 'l', 1)
	}
	deep = append(deep, 'n')
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "empty input"},
		{"version", []byte{2, 'M'}, "version 2: expected 1"},
		{"root not a map", []byte{stored.SnapshotVersion, 'n'}, "expected a map"},
		{"version only", []byte{stored.SnapshotVersion}, "truncated: expected a value"},
		{"trailing bytes", append(bytes.Clone(valid), 'n'), "1 bytes after the document"},
		{"unknown tag", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'z'}, `unknown tag 'z'`},
		{"huge list", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'l', 0xff, 0xff, 0xff, 0xff, 0x0f}, "more than the 0 bytes left"},
		{"huge map", []byte{stored.SnapshotVersion, 'm', 0xff, 0xff, 0xff, 0xff, 0x0f}, "more than the 0 bytes left"},
		{"huge string", []byte{stored.SnapshotVersion, 'm', 1, 0xff, 0x7f, 'a'}, "more than the 1 bytes left"},
		{"keys out of order", []byte{stored.SnapshotVersion, 'm', 2, 1, 'b', 'n', 1, 'a', 'n'}, `map key "a" after "b"`},
		{"repeated key", []byte{stored.SnapshotVersion, 'm', 2, 1, 'a', 'n', 1, 'a', 'n'}, `map key "a" after "a"`},
		{"int8 out of range", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'b', 0x80, 0x02}, "128 out of range for int8"},
		{"truncated varint", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'q', 0x80}, "truncated or overlong signed varint"},
		{"truncated float", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'd', 0, 0}, "truncated: expected 8 bytes"},
		{"NaN", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'd', 0x7f, 0xf8, 0, 0, 0, 0, 0, 1}, "not finite"},
		{"bad json.Number", []byte{stored.SnapshotVersion, 'm', 1, 1, 'a', 'j', 1, 'x'}, "not a valid JSON number"},
		{"too deep", deep, "nested deeper than 1000 levels"},
	}
	for i := range len(valid) - 1 {
		tests = append(tests, struct {
			name string
			data []byte
			want string
		}{fmt.Sprint("truncated to ", i+1, " bytes"), valid[:i+1], "opbus: snapshot: at offset"})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodeSnapshot(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, %v, want an error containing %q", got, err, tc.want)
			}
		})
	}
}

// FuzzSnapshot checks that decoding arbitrary bytes never panics, that
// what decodes is a valid document, and that encoding it is stable: the
// encoding decodes to the same value and encodes to itself.
func FuzzSnapshot(f *testing.F) {
	for _, obj := range []map[string]any{
		{},
		{"n": int64(1 << 60), "u": uint64(math.MaxUint64), "s": "\xff\xfe"},
		{"l": []any{nil, true, 1.5, float32(2), int8(-3), json.Number("4")}, "m": map[string]any(nil), "e": []any{}},
	} {
		data, err := encodeSnapshot(obj)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := decodeSnapshot(data)
		if err != nil {
			return
		}
		if err := validDocument(obj); err != nil {
			t.Fatalf("decoded an invalid document: %v", err)
		}
		enc, err := encodeSnapshot(obj)
		if err != nil {
			t.Fatalf("encodeSnapshot(decodeSnapshot(%x)): %v", data, err)
		}
		back, err := decodeSnapshot(enc)
		if err != nil || !reflect.DeepEqual(back, obj) {
			t.Fatalf("decodeSnapshot(encodeSnapshot(%#v)) = %#v, %v", obj, back, err)
		}
		again, err := encodeSnapshot(back)
		if err != nil || !bytes.Equal(again, enc) {
			t.Fatalf("encoding is not stable: %x then %x, %v", enc, again, err)
		}
	})
}
