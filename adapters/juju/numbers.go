package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
)

// runJSONNumbers runs a tool and decodes its JSON output into v keeping
// numbers exact: an integer that fits in an int64 becomes an int64 (so a
// config value or action parameter above 2^53 stays what Juju holds),
// another integer stays a [json.Number], and a number with a fraction or
// an exponent becomes a float64.
func (t Tools) runJSONNumbers(ctx context.Context, v *map[string]any, name string, args ...string) error {
	out, err := t.run(ctx, name, args, nil)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil // some tools print nothing for an empty result
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("juju: %s: parsing output: %w", name, err)
	}
	for k, x := range *v {
		(*v)[k] = exactNumbers(x)
	}
	return nil
}

// exactNumbers replaces the json.Numbers in v as runJSONNumbers describes.
func exactNumbers(v any) any {
	switch v := v.(type) {
	case json.Number:
		if i, err := v.Int64(); err == nil {
			return i
		}
		if bytes.ContainsAny([]byte(v), ".eE") {
			if f, err := v.Float64(); err == nil {
				return f
			}
		}
		return v
	case map[string]any:
		for k, x := range v {
			v[k] = exactNumbers(x)
		}
	case []any:
		for i, x := range v {
			v[i] = exactNumbers(x)
		}
	}
	return v
}
