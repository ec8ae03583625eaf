package record

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/opbus/opbus/internal/pathsyntax"
)

// A snapshot is a document encoded so that it decodes to exactly the same
// Go values: the JSON round trip turns every number into float64 (losing
// integers above 2^53) and invalid UTF-8 into U+FFFD, so a state saved at
// shutdown would come back different. The format is binary and
// self-describing:
//
//	snapshot = version value          version is 1; the value is a map
//	value    = tag payload
//
// with one tag per Go type:
//
//	'n' nil    'f' false    't' true
//	's' string       uvarint length, bytes (any bytes)
//	'j' json.Number  uvarint length, bytes
//	'm' map[string]any  uvarint count, then count × (uvarint length, key, value), keys in strictly increasing byte order
//	'M' map[string]any(nil)
//	'l' []any  uvarint count, then count values
//	'L' []any(nil)
//	'i' int, 'b' int8, 'h' int16, 'w' int32, 'q' int64: zig-zag varint
//	'I' uint, 'B' uint8, 'H' uint16, 'W' uint32, 'Q' uint64: uvarint
//	'g' float32: 4 bytes, 'd' float64: 8 bytes, IEEE 754 bits, big-endian
//
// Nil and empty maps and lists stay distinct. Encoding accepts what
// opbus's Validate accepts (finite numbers, valid json.Numbers), and decoding
// checks the same, so a decoded snapshot is a valid document.
//
// SnapshotVersion is the version byte a snapshot starts with.
const SnapshotVersion = 1

// EncodeSnapshot encodes a document; see DecodeSnapshot. valid tells the
// json.Numbers the bus accepts.
func EncodeSnapshot(obj map[string]any, valid func(json.Number) bool) ([]byte, error) {
	e := snapshotEncoder{buf: []byte{SnapshotVersion}, valid: valid}
	if err := e.value(obj); err != nil {
		return nil, err
	}
	return e.buf, nil
}

type snapshotEncoder struct {
	buf   []byte
	path  []any                  // for errors: map keys (string) and list indexes (int)
	valid func(json.Number) bool // whether a json.Number is one the bus accepts
}

// EncodeError is a value EncodeSnapshot cannot encode, at Path: map keys
// (string) and list indexes (int) from the root.
type EncodeError struct {
	Path   []any
	Value  any
	Reason string
}

// Error names the value's place and what was expected.
func (e *EncodeError) Error() string {
	return fmt.Sprintf("snapshot: at %v: %s", e.Path, e.Reason)
}

// Segments returns Path in the path syntax the packages that walk values
// report with (internal/pathsyntax), nil for the root.
func (e *EncodeError) Segments() []pathsyntax.Segment {
	if len(e.Path) == 0 {
		return nil
	}
	out := make([]pathsyntax.Segment, len(e.Path))
	for i, s := range e.Path {
		if k, ok := s.(string); ok {
			out[i] = pathsyntax.Segment{Kind: pathsyntax.Key, Key: k}
		} else {
			out[i] = pathsyntax.Segment{Kind: pathsyntax.Index, Index: s.(int)}
		}
	}
	return out
}

// shownPrefix is how much of the path of a value nested too deep an
// EncodeError keeps.
const shownPrefix = 8

func (e *snapshotEncoder) fail(v any, reason string) error {
	return &EncodeError{Path: slices.Clone(e.path), Value: v, Reason: reason}
}

func (e *snapshotEncoder) value(v any) error {
	if len(e.path) > MaxNesting {
		return &EncodeError{Path: slices.Clone(e.path[:shownPrefix]),
			Reason: fmt.Sprintf("nested deeper than %d levels (a value that contains itself?)", MaxNesting)}
	}
	switch x := v.(type) {
	case nil:
		e.buf = append(e.buf, 'n')
	case bool:
		if x {
			e.buf = append(e.buf, 't')
		} else {
			e.buf = append(e.buf, 'f')
		}
	case string:
		e.buf = appendString(append(e.buf, 's'), x)
	case json.Number:
		if !e.valid(x) {
			return e.fail(v, "not a valid JSON number")
		}
		e.buf = appendString(append(e.buf, 'j'), string(x))
	case map[string]any:
		return e.mapValue(x)
	case []any:
		return e.listValue(x)
	default:
		return e.number(v)
	}
	return nil
}

// mapValue encodes a map, its keys in order.
func (e *snapshotEncoder) mapValue(x map[string]any) error {
	if x == nil {
		e.buf = append(e.buf, 'M')
		return nil
	}
	e.buf = binary.AppendUvarint(append(e.buf, 'm'), uint64(len(x)))
	for _, k := range slices.Sorted(maps.Keys(x)) {
		e.buf = appendString(e.buf, k)
		e.path = append(e.path, k)
		err := e.value(x[k])
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// listValue encodes a list.
func (e *snapshotEncoder) listValue(x []any) error {
	if x == nil {
		e.buf = append(e.buf, 'L')
		return nil
	}
	e.buf = binary.AppendUvarint(append(e.buf, 'l'), uint64(len(x)))
	for i, el := range x {
		e.path = append(e.path, i)
		err := e.value(el)
		e.path = e.path[:len(e.path)-1]
		if err != nil {
			return err
		}
	}
	return nil
}

// number encodes a number of one of Go's numeric types, or reports a value
// of any other type.
func (e *snapshotEncoder) number(v any) error {
	switch x := v.(type) {
	case int:
		e.buf = binary.AppendVarint(append(e.buf, 'i'), int64(x))
	case int8:
		e.buf = binary.AppendVarint(append(e.buf, 'b'), int64(x))
	case int16:
		e.buf = binary.AppendVarint(append(e.buf, 'h'), int64(x))
	case int32:
		e.buf = binary.AppendVarint(append(e.buf, 'w'), int64(x))
	case int64:
		e.buf = binary.AppendVarint(append(e.buf, 'q'), x)
	case uint:
		e.buf = binary.AppendUvarint(append(e.buf, 'I'), uint64(x))
	case uint8:
		e.buf = binary.AppendUvarint(append(e.buf, 'B'), uint64(x))
	case uint16:
		e.buf = binary.AppendUvarint(append(e.buf, 'H'), uint64(x))
	case uint32:
		e.buf = binary.AppendUvarint(append(e.buf, 'W'), uint64(x))
	case uint64:
		e.buf = binary.AppendUvarint(append(e.buf, 'Q'), x)
	case float32:
		if f := float64(x); math.IsNaN(f) || math.IsInf(f, 0) {
			return e.fail(v, "not a finite number: JSON has no NaN or infinity")
		}
		e.buf = binary.BigEndian.AppendUint32(append(e.buf, 'g'), math.Float32bits(x))
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return e.fail(v, "not a finite number: JSON has no NaN or infinity")
		}
		e.buf = binary.BigEndian.AppendUint64(append(e.buf, 'd'), math.Float64bits(x))
	default:
		return e.fail(v, fmt.Sprintf("unsupported type %T: expected map[string]any, []any, string, bool, nil or a number", v))
	}
	return nil
}

// DecodeSnapshot decodes what EncodeSnapshot encoded, to values of the same
// Go types. Truncated, malformed or non-canonical input (map keys out of
// order or repeated, values out of their type's range, bytes after the
// end, nesting deeper than MaxNesting) is an error naming the
// offset; it never panics.
func DecodeSnapshot(data []byte, valid func(json.Number) bool) (map[string]any, error) {
	d := snapshotDecoder{data: data, valid: valid}
	if len(data) == 0 {
		return nil, d.fail("empty input: expected a version byte")
	}
	if data[0] != SnapshotVersion {
		return nil, d.fail(fmt.Sprintf("version %d: expected %d", data[0], SnapshotVersion))
	}
	d.pos = 1
	if d.pos < len(data) && data[d.pos] != 'm' && data[d.pos] != 'M' {
		return nil, d.fail(fmt.Sprintf("tag %q: expected a map ('m' or 'M') at the root", data[d.pos]))
	}
	v, err := d.value(0)
	if err != nil {
		return nil, err
	}
	if d.pos != len(data) {
		return nil, d.fail(fmt.Sprintf("%d bytes after the document: expected the end", len(data)-d.pos))
	}
	m, _ := v.(map[string]any)
	return m, nil
}

type snapshotDecoder struct {
	data  []byte
	pos   int
	valid func(json.Number) bool
}

func (d *snapshotDecoder) fail(reason string) error {
	return fmt.Errorf("opbus: snapshot: at offset %d: %s", d.pos, reason)
}

func (d *snapshotDecoder) uvarint() (uint64, error) {
	u, n := binary.Uvarint(d.data[d.pos:])
	if n <= 0 {
		return 0, d.fail("truncated or overlong unsigned varint")
	}
	d.pos += n
	return u, nil
}

func (d *snapshotDecoder) varint() (int64, error) {
	i, n := binary.Varint(d.data[d.pos:])
	if n <= 0 {
		return 0, d.fail("truncated or overlong signed varint")
	}
	d.pos += n
	return i, nil
}

// count reads a length or element count, each unit of which takes at
// least size bytes of the rest of the input.
func (d *snapshotDecoder) count(size int) (int, error) {
	u, err := d.uvarint()
	if err != nil {
		return 0, err
	}
	if u > uint64(len(d.data)-d.pos)/uint64(size) {
		return 0, d.fail(fmt.Sprintf("length %d: more than the %d bytes left", u, len(d.data)-d.pos))
	}
	return int(u), nil
}

func (d *snapshotDecoder) str() (string, error) {
	n, err := d.count(1)
	if err != nil {
		return "", err
	}
	s := string(d.data[d.pos : d.pos+n])
	d.pos += n
	return s, nil
}

func (d *snapshotDecoder) fixed(n int) ([]byte, error) {
	if len(d.data)-d.pos < n {
		return nil, d.fail(fmt.Sprintf("truncated: expected %d bytes", n))
	}
	b := d.data[d.pos : d.pos+n]
	d.pos += n
	return b, nil
}

// signed reads a zig-zag varint that must lie in [lo, hi].
func (d *snapshotDecoder) signed(lo, hi int64, typ string) (int64, error) {
	at := d.pos
	i, err := d.varint()
	if err == nil && (i < lo || i > hi) {
		d.pos = at
		err = d.fail(fmt.Sprintf("%d out of range for %s", i, typ))
	}
	return i, err
}

// unsigned reads a uvarint that must be at most hi.
func (d *snapshotDecoder) unsigned(hi uint64, typ string) (uint64, error) {
	at := d.pos
	u, err := d.uvarint()
	if err == nil && u > hi {
		d.pos = at
		err = d.fail(fmt.Sprintf("%d out of range for %s", u, typ))
	}
	return u, err
}

func (d *snapshotDecoder) value(depth int) (any, error) {
	if depth > MaxNesting {
		return nil, d.fail(fmt.Sprintf("nested deeper than %d levels", MaxNesting))
	}
	if d.pos >= len(d.data) {
		return nil, d.fail("truncated: expected a value")
	}
	tag := d.data[d.pos]
	d.pos++
	switch tag {
	case 'n':
		return nil, nil
	case 'f':
		return false, nil
	case 't':
		return true, nil
	case 's':
		return d.str()
	case 'j':
		at := d.pos
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		if !d.valid(json.Number(s)) {
			d.pos = at
			return nil, d.fail(fmt.Sprintf("json.Number %q: not a valid JSON number", s))
		}
		return json.Number(s), nil
	case 'M':
		return map[string]any(nil), nil
	case 'L':
		return []any(nil), nil
	case 'm':
		return d.mapValue(depth)
	case 'l':
		return d.listValue(depth)
	default:
		return d.number(tag)
	}
}

// mapValue decodes the payload of a map, its keys in increasing order.
func (d *snapshotDecoder) mapValue(depth int) (any, error) {
	n, err := d.count(2) // a key length and a tag at least
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	prev := ""
	for i := range n {
		at := d.pos
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		if i > 0 && strings.Compare(prev, k) >= 0 {
			d.pos = at
			return nil, d.fail(fmt.Sprintf("map key %q after %q: expected keys in increasing order, each once", k, prev))
		}
		prev = k
		if m[k], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// listValue decodes the payload of a list.
func (d *snapshotDecoder) listValue(depth int) (any, error) {
	n, err := d.count(1)
	if err != nil {
		return nil, err
	}
	l := make([]any, n)
	for i := range l {
		if l[i], err = d.value(depth + 1); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// number decodes the payload of a number whose tag was just read.
func (d *snapshotDecoder) number(tag byte) (any, error) {
	switch tag {
	case 'i':
		i, err := d.signed(math.MinInt, math.MaxInt, "int")
		return int(i), err
	case 'b':
		i, err := d.signed(math.MinInt8, math.MaxInt8, "int8")
		return int8(i), err
	case 'h':
		i, err := d.signed(math.MinInt16, math.MaxInt16, "int16")
		return int16(i), err
	case 'w':
		i, err := d.signed(math.MinInt32, math.MaxInt32, "int32")
		return int32(i), err
	case 'q':
		i, err := d.signed(math.MinInt64, math.MaxInt64, "int64")
		return i, err
	case 'I':
		u, err := d.unsigned(math.MaxUint, "uint")
		return uint(u), err
	case 'B':
		u, err := d.unsigned(math.MaxUint8, "uint8")
		return uint8(u), err
	case 'H':
		u, err := d.unsigned(math.MaxUint16, "uint16")
		return uint16(u), err
	case 'W':
		u, err := d.unsigned(math.MaxUint32, "uint32")
		return uint32(u), err
	case 'Q':
		return d.unsigned(math.MaxUint64, "uint64")
	case 'g':
		b, err := d.fixed(4)
		if err != nil {
			return nil, err
		}
		f := math.Float32frombits(binary.BigEndian.Uint32(b))
		if g := float64(f); math.IsNaN(g) || math.IsInf(g, 0) {
			d.pos -= 4
			return nil, d.fail("float32 is not finite: JSON has no NaN or infinity")
		}
		return f, nil
	case 'd':
		b, err := d.fixed(8)
		if err != nil {
			return nil, err
		}
		f := math.Float64frombits(binary.BigEndian.Uint64(b))
		if math.IsNaN(f) || math.IsInf(f, 0) {
			d.pos -= 8
			return nil, d.fail("float64 is not finite: JSON has no NaN or infinity")
		}
		return f, nil
	}
	d.pos--
	return nil, d.fail(fmt.Sprintf("unknown tag %q: expected one of nftsjmMlLibhwqIBHWQgd", tag))
}

// appendString writes s as its uvarint length and bytes.
func appendString(buf []byte, s string) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(s)))
	return append(buf, s...)
}
