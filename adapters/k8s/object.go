package k8s

import (
	"slices"
)

// Helpers that read the JSON-like maps of unstructured objects in place:
// unstructured.Unstructured's getters copy maps and slices on every call,
// and these run on every informer event.

func metadata(obj map[string]any) map[string]any {
	m, _ := obj["metadata"].(map[string]any)
	return m
}

func annotations(obj map[string]any) map[string]any {
	a, _ := metadata(obj)["annotations"].(map[string]any)
	return a
}

// annotation returns the value of the annotation name and whether the
// object has it.
func annotation(obj map[string]any, name string) (string, bool) {
	v, ok := annotations(obj)[name].(string)
	return v, ok
}

// hasRecord reports whether the object carries the record annotation, even
// empty: the adapter has claimed it and its deletion is not handled yet.
func (n *names) hasRecord(obj map[string]any) bool {
	_, ok := annotation(obj, n.record)
	return ok
}

func finalizers(obj map[string]any) []string {
	l, _ := metadata(obj)["finalizers"].([]any)
	out := make([]string, 0, len(l))
	for _, f := range l {
		if s, ok := f.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// hasFinalizer reports whether the object carries the finalizer.
func (n *names) hasFinalizer(obj map[string]any) bool {
	l, _ := metadata(obj)["finalizers"].([]any)
	for _, f := range l {
		if f == n.finalizer {
			return true
		}
	}
	return false
}

// withFinalizer returns the object's finalizers with the finalizer added or
// removed, others in their order; nil when none are left, which a merge
// patch turns into a removal of the list.
func (n *names) withFinalizer(obj map[string]any, on bool) []string {
	fs := slices.DeleteFunc(finalizers(obj), func(f string) bool { return f == n.finalizer })
	if on {
		fs = append(fs, n.finalizer)
	}
	if len(fs) == 0 {
		return nil
	}
	return fs
}

func isDeleting(obj map[string]any) bool {
	return metadata(obj)["deletionTimestamp"] != nil
}

// conditions returns status.conditions and whether it is a list.
func conditions(obj map[string]any) ([]any, bool) {
	st, _ := obj["status"].(map[string]any)
	l, ok := st["conditions"].([]any)
	return l, ok
}

// generation returns metadata.generation, 0 if absent.
func generation(obj map[string]any) int64 {
	switch g := metadata(obj)["generation"].(type) {
	case int64:
		return g
	case int:
		return int64(g)
	case float64:
		return int64(g)
	}
	return 0
}

func resourceVersion(obj map[string]any) string {
	v, _ := metadata(obj)["resourceVersion"].(string)
	return v
}

func uid(obj map[string]any) string {
	v, _ := metadata(obj)["uid"].(string)
	return v
}
