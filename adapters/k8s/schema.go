package k8s

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/nearest"
)

// openAPIDoc is the part of one group version's OpenAPI v3 document (as
// the API server serves it at /openapi/v3/apis/<group>/<version>) that
// tells which fields its objects can have.
type openAPIDoc struct {
	Components struct {
		Schemas map[string]*schemaNode `json:"schemas"`
	} `json:"components"`
}

// schemaNode is one OpenAPI v3 schema, with only what shapes an object:
// descriptions, formats, defaults and validations are left out.
type schemaNode struct {
	Ref                  string                 `json:"$ref"`
	Type                 string                 `json:"type"`
	Properties           map[string]*schemaNode `json:"properties"`
	AdditionalProperties json.RawMessage        `json:"additionalProperties"` // true, false or a schema
	Items                *schemaNode            `json:"items"`
	AllOf                []*schemaNode          `json:"allOf"`
	OneOf                []*schemaNode          `json:"oneOf"`
	AnyOf                []*schemaNode          `json:"anyOf"`
	PreserveUnknown      bool                   `json:"x-kubernetes-preserve-unknown-fields"`
	EmbeddedResource     bool                   `json:"x-kubernetes-embedded-resource"`
	IntOrString          bool                   `json:"x-kubernetes-int-or-string"`
	GVK                  []struct {
		Group, Version, Kind string
	} `json:"x-kubernetes-group-version-kind"`

	values *schemaNode // AdditionalProperties as a schema, once decoded
	open   bool        // AdditionalProperties is true
}

// parseOpenAPI decodes an OpenAPI v3 document.
func parseOpenAPI(data []byte) (*openAPIDoc, error) {
	var doc openAPIDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("not an OpenAPI v3 document: %w", err)
	}
	for _, n := range doc.Components.Schemas {
		if err := n.decode(); err != nil {
			return nil, err
		}
	}
	return &doc, nil
}

// decode interprets the additionalProperties of n and of every schema in
// it.
func (n *schemaNode) decode() error {
	if n == nil {
		return nil
	}
	switch a := strings.TrimSpace(string(n.AdditionalProperties)); {
	case a == "" || a == "false" || a == "null":
	case a == "true":
		n.open = true
	default:
		n.values = &schemaNode{}
		if err := json.Unmarshal(n.AdditionalProperties, n.values); err != nil {
			return fmt.Errorf("additionalProperties: %w", err)
		}
	}
	n.AdditionalProperties = nil
	for _, c := range slices.Concat(slices.Collect(maps.Values(n.Properties)), []*schemaNode{n.Items, n.values}, n.AllOf, n.OneOf, n.AnyOf) {
		if err := c.decode(); err != nil {
			return err
		}
	}
	return nil
}

// kind returns the schema of objects of group, version and kind, or nil
// if the document has none.
func (d *openAPIDoc) kind(group, version, kind string) *schemaNode {
	for _, name := range slices.Sorted(maps.Keys(d.Components.Schemas)) {
		n := d.Components.Schemas[name]
		for _, g := range n.GVK {
			if g.Group == group && g.Version == version && g.Kind == kind {
				return n
			}
		}
	}
	return nil
}

// shape is what a set of schemas allows at one place of an object: the
// union of what each allows, following $ref and allOf, oneOf and anyOf.
type shape struct {
	open   bool                     // anything can be below: unknown fields are kept, or nothing is said
	props  map[string][]*schemaNode // the named fields
	values []*schemaNode            // the values of a map (additionalProperties)
	items  []*schemaNode            // the elements of a list
	types  map[string]bool          // the types named
}

// maxRefs bounds the $ref and composition links followed from one place
// (the schemas of JSONSchemaProps refer to themselves).
const maxRefs = 32

// shapeOf returns the shape of the schemas ns in doc.
func (d *openAPIDoc) shapeOf(ns []*schemaNode) *shape {
	s := &shape{props: map[string][]*schemaNode{}, types: map[string]bool{}}
	seen := map[*schemaNode]bool{}
	var add func(n *schemaNode, depth int)
	add = func(n *schemaNode, depth int) {
		if n == nil || seen[n] {
			return
		}
		if depth > maxRefs {
			s.open = true
			return
		}
		seen[n] = true
		if n.Ref != "" {
			ref, ok := d.Components.Schemas[strings.TrimPrefix(n.Ref, "#/components/schemas/")]
			if !ok {
				s.open = true // a reference out of the document: unknown
				return
			}
			add(ref, depth+1)
		}
		if n.PreserveUnknown || n.open {
			s.open = true
		}
		if n.Type != "" {
			s.types[n.Type] = true
		}
		if n.IntOrString {
			s.types["integer"], s.types["string"] = true, true
		}
		for k, p := range n.Properties {
			s.props[k] = append(s.props[k], p)
		}
		if n.EmbeddedResource {
			for _, k := range []string{"apiVersion", "kind", "metadata"} {
				if _, ok := n.Properties[k]; !ok {
					s.props[k] = append(s.props[k], &schemaNode{PreserveUnknown: true})
				}
			}
		}
		if n.values != nil {
			s.values = append(s.values, n.values)
		}
		if n.Items != nil {
			s.items = append(s.items, n.Items)
		}
		for _, c := range slices.Concat(n.AllOf, n.OneOf, n.AnyOf) {
			add(c, depth+1)
		}
	}
	for _, n := range ns {
		add(n, 0)
	}
	if len(s.props) == 0 && len(s.values) == 0 && len(s.items) == 0 && !s.scalar() && !s.types["array"] {
		// An object that names no field (a RawExtension, FieldsV1), or
		// a schema that says nothing: its fields are not known.
		s.open = true
	}
	return s
}

// scalar reports whether every type the shape names is a scalar one.
func (s *shape) scalar() bool {
	if len(s.types) == 0 {
		return false
	}
	for t := range s.types {
		switch t {
		case "string", "integer", "number", "boolean":
		default:
			return false
		}
	}
	return true
}

// what describes the value at a place of this shape, for errors.
func (s *shape) what() string {
	switch {
	case s.scalar():
		types := strings.Join(slices.Sorted(maps.Keys(s.types)), " or ")
		if strings.IndexByte("aeiou", types[0]) >= 0 {
			return "an " + types
		}
		return "a " + types
	case len(s.items) > 0 || s.types["array"]:
		return "a list"
	default:
		return "an object"
	}
}

// fieldError tells why a path cannot exist in a schema.
type fieldError struct {
	at     opbus.Path // the place the path leaves the schema
	reason string
}

// check returns why p cannot address anything in an object of schema
// root, or nil if it can.
func (d *openAPIDoc) check(root *schemaNode, p opbus.Path) *fieldError {
	return d.checkAt([]*schemaNode{root}, nil, p)
}

func (d *openAPIDoc) checkAt(ns []*schemaNode, at, rest opbus.Path) *fieldError {
	if len(rest) == 0 {
		return nil
	}
	s := d.shapeOf(ns)
	if s.open {
		return nil
	}
	seg, next := rest[0], append(slices.Clip(at), rest[0])
	where := "the object"
	if len(at) > 0 {
		where = at.String()
	}
	if s.scalar() {
		return &fieldError{at: at, reason: fmt.Sprintf("%s is %s: nothing is below it", where, s.what())}
	}
	switch seg.Kind {
	case opbus.SegKey:
		if c, ok := s.props[seg.Key]; ok {
			return d.checkAt(c, next, rest[1:])
		}
		if len(s.values) > 0 {
			return d.checkAt(s.values, next, rest[1:])
		}
		if len(s.props) == 0 {
			return &fieldError{at: at, reason: fmt.Sprintf("%s is %s: address its elements with [*], [field=value] or [index]", where, s.what())}
		}
		return &fieldError{at: at, reason: fmt.Sprintf("%s has no field %q%s", where, seg.Key, suggest(at, seg.Key, slices.Collect(maps.Keys(s.props))))}
	case opbus.SegIndex, opbus.SegMatch:
		if len(s.items) == 0 {
			return &fieldError{at: at, reason: fmt.Sprintf("%s is %s, not a list: %s addresses a list element", where, s.what(), seg)}
		}
		if seg.Kind == opbus.SegMatch {
			es := d.shapeOf(s.items)
			if _, ok := es.props[seg.Key]; !ok && !es.open && len(es.values) == 0 {
				return &fieldError{at: at, reason: fmt.Sprintf("the elements of %s have no field %q to match%s", where, seg.Key, suggest(nil, seg.Key, slices.Collect(maps.Keys(es.props))))}
			}
		}
		return d.checkAt(s.items, next, rest[1:])
	case opbus.SegAny:
		var first *fieldError
		for _, c := range slices.Concat([][]*schemaNode{s.items, s.values}, slices.Collect(maps.Values(s.props))) {
			if len(c) == 0 {
				continue
			}
			err := d.checkAt(c, next, rest[1:])
			if err == nil {
				return nil
			}
			if first == nil {
				first = err
			}
		}
		if first == nil {
			return &fieldError{at: at, reason: fmt.Sprintf("%s holds nothing for [*] to match", where)}
		}
		return &fieldError{at: at, reason: fmt.Sprintf("no value of %s can have %s", where, rest[1:])}
	}
	return nil
}

// suggest returns ", did you mean X?" naming the nearest of the known
// names, and the known names nearest to name, for an error about a key
// name under at.
func suggest(at opbus.Path, name string, known []string) string {
	near := nearest.Names(name, known, 6)
	if len(near) == 0 {
		return ""
	}
	out := ""
	if d := nearest.Distance(strings.ToLower(name), strings.ToLower(near[0])); d <= max(2, len(name)/3) {
		out = fmt.Sprintf(": did you mean %s?", append(slices.Clip(at), opbus.MapKey(near[0])))
	} else {
		out = ":"
	}
	more := ""
	if len(known) > len(near) {
		more = fmt.Sprintf(", … (%d in all)", len(known))
	}
	return fmt.Sprintf("%s known: %s%s", out, strings.Join(near, ", "), more)
}
