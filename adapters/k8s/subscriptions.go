package k8s

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/openapi"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/nearest"
)

// schemaTimeout bounds the reading of the OpenAPI schemas at startup.
const schemaTimeout = 30 * time.Second

// checkKinds refuses a handler that lists a kind no resource rs holds: it
// would never run. It suggests the kind the handler most likely meant,
// such as "Backup.demo.example.com" for "Backup".
func checkKinds(subs []opbus.Subscription, rs []*resource) error {
	held := make([]string, len(rs))
	for i, r := range rs {
		held[i] = r.keyKind
	}
	slices.Sort(held)
	for _, sub := range subs {
		for _, k := range sub.Kinds {
			if slices.Contains(held, k) {
				continue
			}
			hint := ""
			if m := meant(k, rs); m != "" {
				hint = fmt.Sprintf(": did you mean %q?", m)
			}
			return fmt.Errorf("k8s: handler %q lists kind %q, which no watched resource holds, so it would never run%s (kinds watched: %s; a kind outside the core group is qualified with its group, as KindOf writes it)",
				sub.ID, k, hint, strings.Join(held, ", "))
		}
	}
	return nil
}

// meant returns the kind of rs that k most likely means: the same kind
// without its group or in another case, the resource's plural, or a kind
// at a small edit distance.
func meant(k string, rs []*resource) string {
	bare, _, _ := strings.Cut(k, ".")
	for _, r := range rs {
		if strings.EqualFold(k, r.keyKind) || strings.EqualFold(bare, r.kind) || strings.EqualFold(bare, r.gvr.Resource) ||
			strings.EqualFold(k, r.gvr.GroupResource().String()) {
			return r.keyKind
		}
	}
	kinds := make([]string, len(rs))
	for i, r := range rs {
		kinds[i] = r.keyKind
	}
	if near := nearest.Names(k, kinds, 1); len(near) == 1 && nearest.Distance(strings.ToLower(k), strings.ToLower(near[0])) <= max(2, len(k)/4) {
		return near[0]
	}
	return ""
}

// kindSchema is the schema of the objects of one resource.
type kindSchema struct {
	doc  *openAPIDoc
	root *schemaNode
}

// readSchemas reads from the API server the OpenAPI v3 schema of the
// objects of each resource of rs. A schema that cannot be read (the server
// publishes none, RBAC forbids it, a custom resource's schema is not yet
// published) is left out, and logged once: the fields of its objects are
// then not checked.
func (s *Source) readSchemas(ctx context.Context, rs []*resource) map[*resource]*kindSchema {
	ctx, cancel := context.WithTimeout(ctx, schemaTimeout)
	defer cancel()
	begin := time.Now()
	out := map[*resource]*kindSchema{}
	var missing []string
	var errs []error
	paths, err := s.openapi.PathsWithContext(ctx)
	if err != nil {
		errs = append(errs, fmt.Errorf("listing the schemas: %w", err))
		for _, r := range rs {
			missing = append(missing, r.gvr.GroupResource().String())
		}
	}
	docs := map[schema.GroupVersion]*openAPIDoc{}
	for _, r := range rs {
		if err != nil {
			break
		}
		gv := r.gvr.GroupVersion()
		doc, ok := docs[gv]
		if !ok {
			doc, ok = nil, true
			if d, err := readSchema(ctx, paths, gv); err != nil {
				errs = append(errs, err)
			} else {
				doc = d
			}
			docs[gv] = doc
		}
		var root *schemaNode
		if doc != nil {
			root = doc.kind(r.gvr.Group, r.gvr.Version, r.kind)
		}
		if root == nil {
			missing = append(missing, r.gvr.GroupResource().String())
			continue
		}
		out[r] = &kindSchema{doc: doc, root: root}
	}
	if len(missing) > 0 {
		s.log.Info("k8s: no schema for some watched resources: the fields handlers subscribe to are not checked against it",
			"resources", strings.Join(missing, ", "), "err", errors.Join(errs...))
	}
	s.log.Debug("k8s: schemas read", "resources", len(out), "took", time.Since(begin))
	return out
}

// readSchema reads and decodes the OpenAPI v3 document of gv.
func readSchema(ctx context.Context, paths map[string]openapi.GroupVersionWithContext, gv schema.GroupVersion) (*openAPIDoc, error) {
	key := "apis/" + gv.Group + "/" + gv.Version
	if gv.Group == "" {
		key = "api/" + gv.Version
	}
	p, ok := paths[key]
	if !ok {
		return nil, fmt.Errorf("%s: the API server publishes no schema at /openapi/v3/%s", gv, key)
	}
	data, err := p.SchemaWithContext(ctx, "application/json")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gv, err)
	}
	doc, err := parseOpenAPI(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", gv, err)
	}
	return doc, nil
}

// checkFields refuses a handler field, or a path the user asked the bus
// to ignore, that no object of the resources in its scope can have by
// their schemas: it would never change. A field is accepted when some
// resource in scope has no known schema.
func (s *Source) checkFields(ctx context.Context, subs []opbus.Subscription, rs []*resource) error {
	ignored := s.userIgnored()
	if !slices.ContainsFunc(subs, func(sub opbus.Subscription) bool { return len(sub.Fields) > 0 }) && len(ignored) == 0 || s.openapi == nil {
		return nil // nothing to check (no need to read the schemas), or no client to read them with
	}
	schemas := s.readSchemas(ctx, rs)
	kinds := map[string]*resource{}
	for _, r := range rs {
		kinds[r.keyKind] = r
	}
	for _, sub := range subs {
		var scope []*resource
		for _, r := range rs {
			if len(sub.Kinds) == 0 || slices.Contains(sub.Kinds, r.keyKind) {
				scope = append(scope, r)
			}
		}
		for _, f := range sub.Fields {
			if len(f) > 0 && f[0] == opbus.MapKey(opbus.RelatedField) {
				// Related objects: the related kind's, checked by its
				// schema (the bus checked the path's form).
				if why := s.checkRelated(f, kinds, schemas); why != "" {
					return fmt.Errorf("k8s: handler %q subscribes to %s, which %s", sub.ID, f, why)
				}
				continue
			}
			if why := impossible(schemas, scope, f); why != "" {
				return fmt.Errorf("k8s: handler %q subscribes to %s, which %s", sub.ID, f, why)
			}
		}
	}
	for _, p := range ignored {
		path, err := opbus.ParsePath(p)
		if err != nil {
			continue // the bus refused it already
		}
		if why := impossible(schemas, rs, path); why != "" {
			return fmt.Errorf("k8s: ignored path %s (opbus.Options.Ignore) can never match, as a field it names %s", p, why)
		}
	}
	return nil
}

// impossible returns why no object of the resources rs can have a value
// at p, or "" if one can or the schema of one is not known.
func impossible(schemas map[*resource]*kindSchema, rs []*resource, p opbus.Path) string {
	var whys []string
	for _, r := range rs {
		ks, ok := schemas[r]
		if !ok {
			return ""
		}
		ferr := ks.doc.check(ks.root, p)
		if ferr == nil {
			return ""
		}
		whys = append(whys, fmt.Sprintf("%s (by the API server's schema of %s in %s): %s", r.keyKind, r.gvr.Resource, r.gvr.GroupVersion(), ferr.reason))
	}
	if len(whys) == 0 {
		return ""
	}
	return "no object can have: " + strings.Join(whys, "; ")
}

// userIgnored returns the paths the user gave in [opbus.Options].Ignore to
// [Source.BusOptions], besides the adapter's and the bus's own.
func (s *Source) userIgnored() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, p := range s.ignored {
		if !slices.Contains(Ignore, p) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}
