package charmmeta

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Params returns params with the defaults of a's schema filled in, as
// Juju fills them when it queues the action, and validates the result
// against the schema as Juju does before the action runs. strict is Juju
// 4's rule that an action without additionalProperties refuses
// parameters it does not declare; Juju 3 allows them.
//
// It checks type (string, integer, number, boolean, object, array, null,
// or a list of them), enum, required, additionalProperties (a boolean),
// minimum, maximum, minLength, maxLength, the properties of nested
// objects and the items of arrays. The error lists every failure in the words Juju prints:
// "validation failed: (root).size : Invalid type. Expected: integer,
// given: string".
func (a Action) Params(params map[string]any, strict bool) (map[string]any, error) {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	fillDefaults(a.Schema, out)
	var errs []string
	validate(a.Schema, out, "(root)", strict, &errs)
	if len(errs) > 0 {
		return nil, fmt.Errorf("validation failed: %s", strings.Join(errs, "; "))
	}
	return out, nil
}

// Defaults returns params with the defaults of a's schema filled in,
// unchecked.
func (a Action) Defaults(params map[string]any) map[string]any {
	out := maps.Clone(params)
	if out == nil {
		out = map[string]any{}
	}
	fillDefaults(a.Schema, out)
	return out
}

// fillDefaults sets the defaults of the properties of schema missing in
// obj, and those of nested objects present.
func fillDefaults(schema map[string]any, obj map[string]any) {
	props, _ := schema["properties"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(props)) {
		p, _ := props[name].(map[string]any)
		v, present := obj[name]
		if d, has := p["default"]; !present && has {
			obj[name] = d
			continue
		}
		if sub, ok := v.(map[string]any); ok {
			sub = maps.Clone(sub)
			fillDefaults(p, sub)
			obj[name] = sub
		}
	}
}

func validate(schema map[string]any, v any, at string, strict bool, errs *[]string) {
	fail := func(format string, args ...any) { *errs = append(*errs, at+" : "+fmt.Sprintf(format, args...)) }
	if t, ok := schema["type"]; ok {
		var types []string
		switch t := t.(type) {
		case string:
			types = []string{t}
		case []any:
			for _, x := range t {
				if s, ok := x.(string); ok {
					types = append(types, s)
				}
			}
		}
		given := typeOf(v)
		if !slices.ContainsFunc(types, func(want string) bool { return want == given || (want == "number" && given == "integer") }) {
			fail("Invalid type. Expected: %s, given: %s", strings.Join(types, ", "), given)
			return
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.ContainsFunc(enum, func(e any) bool { return equal(e, v) }) {
		var vs []string
		for _, e := range enum {
			b, _ := json.Marshal(e)
			vs = append(vs, string(b))
		}
		fail("%s must be one of the following: %s", strings.TrimPrefix(at, "(root)."), strings.Join(vs, ", "))
	}
	if n, ok := number(v); ok {
		if min, ok := number(schema["minimum"]); ok && n < min {
			fail("Must be greater than or equal to %v", schema["minimum"])
		}
		if max, ok := number(schema["maximum"]); ok && n > max {
			fail("Must be less than or equal to %v", schema["maximum"])
		}
	}
	if s, ok := v.(string); ok {
		if min, ok := number(schema["minLength"]); ok && float64(len([]rune(s))) < min {
			fail("String length must be greater than or equal to %v", schema["minLength"])
		}
		if max, ok := number(schema["maxLength"]); ok && float64(len([]rune(s))) > max {
			fail("String length must be less than or equal to %v", schema["maxLength"])
		}
	}
	if list, ok := v.([]any); ok {
		validateItems(schema, list, at, strict, errs)
		return
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return
	}
	props, _ := schema["properties"].(map[string]any)
	if req, ok := schema["required"].([]any); ok {
		for _, r := range req {
			if name, _ := r.(string); name != "" {
				if _, present := obj[name]; !present {
					fail("%s is required", name)
				}
			}
		}
	}
	additional, set := schema["additionalProperties"].(bool)
	if !set {
		additional = !strict
	}
	for _, name := range slices.Sorted(maps.Keys(obj)) {
		if p, ok := props[name].(map[string]any); ok {
			validate(p, obj[name], at+"."+name, strict, errs)
		} else if _, declared := props[name]; !declared && !additional {
			fail("Additional property %s is not allowed", name)
		}
	}
}

// validateItems validates the elements of an array against the schema's
// items: one schema for every element, or a list of schemas, one per
// position (elements past the list are not checked). An element's place
// is its index, "(root).tags.0", as Juju prints it.
func validateItems(schema map[string]any, list []any, at string, strict bool, errs *[]string) {
	switch items := schema["items"].(type) {
	case map[string]any:
		for i, x := range list {
			validate(items, x, at+"."+strconv.Itoa(i), strict, errs)
		}
	case []any:
		for i, x := range list[:min(len(list), len(items))] {
			if sub, ok := items[i].(map[string]any); ok {
				validate(sub, x, at+"."+strconv.Itoa(i), strict, errs)
			}
		}
	}
}

// typeOf names v's JSON schema type; a whole number is an integer.
func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	if n, ok := number(v); ok {
		if n == math.Trunc(n) && !math.IsInf(n, 0) {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// number returns v as a float64 when it is a number.
func number(v any) (float64, bool) {
	switch v := v.(type) {
	case int:
		return float64(v), true
	case int64:
		return float64(v), true
	case float64:
		return v, true
	case json.Number:
		f, err := v.Float64()
		return f, err == nil
	}
	return 0, false
}

// equal compares JSON values, numbers by value.
func equal(a, b any) bool {
	if x, ok := number(a); ok {
		y, ok := number(b)
		return ok && x == y
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
