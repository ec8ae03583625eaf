package k8s

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// fillTypeMeta sets u's apiVersion and kind, when obj (what u was made
// from) left them out, from the type of obj: its kinds in
// [Options].Scheme, then in client-go's scheme of Kubernetes' own types,
// then the watched resource whose kind is the name of obj's Go type (a
// custom resource's type, such as Widget). It fails, naming the type, when
// none says, or when two watched resources have the kind.
func (s *Source) fillTypeMeta(obj any, u *unstructured.Unstructured) error {
	if u.GetAPIVersion() != "" && u.GetKind() != "" {
		return nil
	}
	switch obj.(type) {
	case map[string]any, *unstructured.Unstructured:
		return nil // no type to tell: the caller names what is missing
	}
	gvk, err := s.kindOfType(obj)
	if err != nil {
		return err
	}
	if u.GetKind() != "" && u.GetKind() != gvk.Kind {
		return fmt.Errorf("the object of type %T has kind %q and no apiVersion: set apiVersion", obj, u.GetKind())
	}
	u.SetGroupVersionKind(gvk)
	return nil
}

// kindOfType returns the kind of obj's Go type; see fillTypeMeta.
func (s *Source) kindOfType(obj any) (schema.GroupVersionKind, error) {
	if ro, ok := obj.(runtime.Object); ok {
		for _, sc := range []*runtime.Scheme{s.opts.Scheme, clientgoscheme.Scheme} {
			if sc == nil {
				continue
			}
			if gvks, _, err := sc.ObjectKinds(ro); err == nil && len(gvks) > 0 && !gvks[0].Empty() {
				return gvks[0], nil
			}
		}
	}
	t := reflect.TypeOf(obj)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t.Name() == "" || t.Kind() != reflect.Struct {
		return schema.GroupVersionKind{}, fmt.Errorf("the %T object has no apiVersion or kind: expected both set", obj)
	}
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	var found []*resource
	for _, r := range kinds {
		if r.kind == t.Name() {
			found = append(found, r)
		}
	}
	switch len(found) {
	case 1:
		return found[0].gvr.GroupVersion().WithKind(found[0].kind), nil
	case 0:
		return schema.GroupVersionKind{}, fmt.Errorf("the object of type %T has no apiVersion or kind, its type is in no scheme, and no watched resource has kind %s: set its TypeMeta, or add the type to Options.Scheme", obj, t.Name())
	}
	return schema.GroupVersionKind{}, fmt.Errorf("the object of type %T has no apiVersion or kind, and watched resources of two groups have kind %s: set its TypeMeta, or add the type to Options.Scheme", obj, t.Name())
}
