package juju

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"reflect"
	"slices"
	"strings"
	"unicode"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju/internal/charmmeta"
)

// LoadConfig decodes the document's config into a new T, a struct, as
// ops' load_config does: each exported field takes the option its `juju`
// tag names (`juju:"log-level"`; `juju:"-"` leaves the field alone) or,
// without a tag, the option named by the field's name in lower case with
// a dash between words (LogLevel takes log-level); the fields of an
// embedded struct without a tag are promoted, as encoding/json promotes
// them. An option the config does not hold takes its default from the
// charm's metadata (config.yaml or charmcraft.yaml, read by [Run]); one
// with neither leaves the field zero (a pointer field nil).
//
// Fields may be strings, booleans, integers, floats, pointers to those,
// slices, maps with string keys, nested structs (from a JSON object) and
// any. A value that does not fit its field (a string for an int, an
// integer beyond the field's range, a fraction for an integer) is an
// error naming the option, as is a field naming an option the charm does
// not declare, when its metadata is known. The handler must subscribe to
// config (or the options it reads).
//
// ctx is the handler's: outside [Run] no metadata is known, and only the
// document's values are decoded.
func LoadConfig[T any](ctx context.Context, ev *opbus.Event) (T, error) {
	var out T
	values, _ := ev.Object()["config"].(map[string]any)
	defaults, declared := map[string]any{}, []string(nil)
	if c := charmOf(ctx); c != nil && c.Options != nil {
		declared = slices.Sorted(maps.Keys(c.Options))
		for name, o := range c.Options {
			if o.Default != nil {
				defaults[name] = o.Default
			}
		}
	}
	err := decodeInto(&out, values, defaults, declared, "config option")
	return out, err
}

// LoadParams decodes the running action's parameters into a new T, a
// struct, as ops' load_params does, by the rules of [LoadConfig]: fields
// take the parameter their `juju` tag or their name names, a parameter
// the action was not given takes its default from the action's schema in
// actions.yaml or charmcraft.yaml, and a value that does not fit its
// field is an error naming the parameter. The handler must subscribe to
// action (as [OnAction] does); outside an action it is an error.
func LoadParams[T any](ctx context.Context, ev *opbus.Event) (T, error) {
	var out T
	action, _ := ev.Object()["action"].(map[string]any)
	if action == nil {
		return out, errors.New("juju: LoadParams: the document holds no action (subscribe to action, as OnAction does, and run in an action)")
	}
	values, _ := action["params"].(map[string]any)
	defaults, declared := map[string]any{}, []string(nil)
	name, _ := action["name"].(string)
	if a, ok := charmOf(ctx).Action(name); ok {
		props, _ := a.Schema["properties"].(map[string]any)
		declared = slices.Sorted(maps.Keys(props))
		defaults = a.Defaults(nil)
	}
	err := decodeInto(&out, values, defaults, declared, "action parameter")
	return out, err
}

// charmOf returns what the running charm declares, nil when unknown.
func charmOf(ctx context.Context) *charmmeta.Charm {
	if h := FromContext(ctx); h != nil {
		return h.charm
	}
	return nil
}

// decodeInto sets the fields of the struct *out from values, or defaults
// when values lacks one. declared, when not nil, lists the names fields
// may take; what names the kind of value in errors.
func decodeInto(out any, values, defaults map[string]any, declared []string, what string) error {
	rv := reflect.ValueOf(out).Elem()
	if rv.Kind() != reflect.Struct {
		return fmt.Errorf("juju: loading the %ss into %s: want a struct type", what, rv.Type())
	}
	var errs []error
	decodeFields(rv, values, defaults, declared, what, "juju: ", &errs)
	return errors.Join(errs...)
}

// decodeFields sets the fields of the struct rv as decodeInto does, and
// those of the structs it embeds without a juju tag, whose fields are
// promoted as encoding/json promotes them. prefix starts each error.
func decodeFields(rv reflect.Value, values, defaults map[string]any, declared []string, what, prefix string, errs *[]error) {
	rt := rv.Type()
	for i := range rt.NumField() {
		f := rt.Field(i)
		name := f.Tag.Get("juju")
		if f.Anonymous && name == "" {
			if ft := f.Type; ft.Kind() == reflect.Struct {
				decodeFields(rv.Field(i), values, defaults, declared, what, prefix, errs)
				continue
			} else if ft.Kind() == reflect.Pointer && ft.Elem().Kind() == reflect.Struct && f.IsExported() {
				if rv.Field(i).IsNil() {
					rv.Field(i).Set(reflect.New(ft.Elem()))
				}
				decodeFields(rv.Field(i).Elem(), values, defaults, declared, what, prefix, errs)
				continue
			}
		}
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = kebab(f.Name)
		}
		if declared != nil && !slices.Contains(declared, name) {
			*errs = append(*errs, fmt.Errorf("%s%s takes %s %q, which the charm does not declare (%sit declares %s)", prefix, fieldName(rt, f), what, name, didYouMean("", name, declared), strings.Join(declared, ", ")))
			continue
		}
		v, ok := values[name]
		if !ok || v == nil {
			if v, ok = defaults[name]; !ok || v == nil {
				continue
			}
		}
		if err := setValue(rv.Field(i), v); err != nil {
			*errs = append(*errs, fmt.Errorf("%s%s %q: %w (for %s)", prefix, what, name, err, fieldName(rt, f)))
		}
	}
}

// fieldName names the field f of the struct type rt for errors: "T.F",
// or "F" when rt has no name.
func fieldName(rt reflect.Type, f reflect.StructField) string {
	if rt.Name() == "" {
		return f.Name
	}
	return rt.Name() + "." + f.Name
}

// kebab turns a Go field name into an option name: LogLevel → log-level,
// HTTPPort → http-port.
func kebab(s string) string {
	r := []rune(s)
	var b strings.Builder
	for i, c := range r {
		if unicode.IsUpper(c) && i > 0 && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1]) || (i+1 < len(r) && unicode.IsLower(r[i+1]))) {
			b.WriteByte('-')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// setValue sets dst from the JSON-like value v.
func setValue(dst reflect.Value, v any) error {
	if dst.Kind() == reflect.Pointer {
		p := reflect.New(dst.Type().Elem())
		if err := setValue(p.Elem(), v); err != nil {
			return err
		}
		dst.Set(p)
		return nil
	}
	got := func() error { return fmt.Errorf("want %s, got %s", kindName(dst.Type()), describe(v)) }
	switch dst.Kind() {
	case reflect.String:
		s, ok := v.(string)
		if !ok {
			return got()
		}
		dst.SetString(s)
	case reflect.Bool:
		b, ok := v.(bool)
		if !ok {
			return got()
		}
		dst.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := integerOf(v)
		if !ok || dst.OverflowInt(n) {
			return got()
		}
		dst.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, ok := integerOf(v)
		if !ok || n < 0 || dst.OverflowUint(uint64(n)) {
			return got()
		}
		dst.SetUint(uint64(n))
	case reflect.Float32, reflect.Float64:
		f, ok := floatOf(v)
		if !ok || dst.OverflowFloat(f) {
			return got()
		}
		dst.SetFloat(f)
	case reflect.Interface:
		if !reflect.TypeOf(v).AssignableTo(dst.Type()) {
			return got()
		}
		dst.Set(reflect.ValueOf(v))
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return got()
		}
		s := reflect.MakeSlice(dst.Type(), len(list), len(list))
		for i, x := range list {
			if err := setValue(s.Index(i), x); err != nil {
				return fmt.Errorf("element %d: %w", i, err)
			}
		}
		dst.Set(s)
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok || dst.Type().Key().Kind() != reflect.String {
			return got()
		}
		out := reflect.MakeMapWithSize(dst.Type(), len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			e := reflect.New(dst.Type().Elem()).Elem()
			if err := setValue(e, m[k]); err != nil {
				return fmt.Errorf("key %q: %w", k, err)
			}
			out.SetMapIndex(reflect.ValueOf(k).Convert(dst.Type().Key()), e)
		}
		dst.Set(out)
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return got()
		}
		p := reflect.New(dst.Type())
		var errs []error
		decodeFields(p.Elem(), m, nil, nil, "field", "", &errs)
		if len(errs) > 0 {
			msgs := make([]string, len(errs))
			for i, e := range errs {
				msgs[i] = e.Error()
			}
			return errors.New(strings.Join(msgs, "; "))
		}
		dst.Set(p.Elem())
	default:
		return fmt.Errorf("fields of type %s are not supported", dst.Type())
	}
	return nil
}

// integerOf returns v as an int64 when it is a whole number that fits.
func integerOf(v any) (int64, bool) {
	switch v := v.(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case json.Number:
		n, err := v.Int64()
		return n, err == nil
	case float64:
		if v == math.Trunc(v) && math.Abs(v) <= 1<<53 {
			return int64(v), true
		}
	}
	return 0, false
}

// floatOf returns v as a float64 when it is a number.
func floatOf(v any) (float64, bool) {
	switch v := v.(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// kindName says what a Go type takes, for errors.
func kindName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer that fits " + t.String()
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "a boolean"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	}
	return t.String()
}

// describe names a JSON-like value's type and shows a short value.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return "a string" // its content may be a secret
	case bool:
		return fmt.Sprintf("the boolean %v", v)
	case int64, int, float64, json.Number:
		return fmt.Sprintf("the number %v", v)
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}
