package charmyaml

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Marshal writes v (what encoding/json decodes into an interface: maps,
// slices, strings, float64, bools, nil; int64 too) as block YAML indented
// by four spaces, as yaml.v3 writes it: keys sorted, strings always
// double-quoted, with the characters YAML refuses escaped.
func Marshal(v any) string {
	var b strings.Builder
	switch c := v.(type) {
	case map[string]any:
		if len(c) > 0 {
			write(&b, c, 0)
			return b.String()
		}
	case []any:
		if len(c) > 0 {
			write(&b, c, 0)
			return b.String()
		}
	}
	return inline(v) + "\n"
}

// write writes the collection v, its lines indented by indent.
func write(b *strings.Builder, v any, indent int) {
	pad := strings.Repeat(" ", indent)
	switch v := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			b.WriteString(pad + quote(k) + ":")
			child(b, v[k], indent)
		}
	case []any:
		for _, e := range v {
			b.WriteString(pad + "-")
			child(b, e, indent)
		}
	}
}

// child writes the value of a key or item on a line indented by indent.
func child(b *strings.Builder, v any, indent int) {
	switch c := v.(type) {
	case map[string]any:
		if len(c) > 0 {
			b.WriteString("\n")
			write(b, c, indent+4)
			return
		}
	case []any:
		if len(c) > 0 {
			b.WriteString("\n")
			write(b, c, indent+4)
			return
		}
	}
	b.WriteString(" " + inline(v) + "\n")
}

// inline writes a scalar, or an empty collection.
func inline(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		return quote(v)
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case int64:
		return strconv.FormatInt(v, 10)
	case int:
		return strconv.Itoa(v)
	case map[string]any:
		return "{}"
	case []any:
		return "[]"
	}
	return quote(fmt.Sprint(v))
}

// quote double-quotes s as JSON does, which YAML reads the same, with
// the characters YAML refuses or folds escaped too.
func quote(s string) string {
	j, _ := json.Marshal(s)
	var b strings.Builder
	for _, r := range string(j) {
		if (r >= 0x7f && r <= 0x9f) || r == 0xfffe || r == 0xffff {
			fmt.Fprintf(&b, `\u%04x`, r)
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}
