package k8s

import (
	"github.com/opbus/opbus"
)

// Names the adapter writes into the objects it watches, all under the
// library's own domain so that they cannot clash with anyone else's. These
// are the names of an operator of the default name; one with another
// [Options].Name N writes them under the domain N.opbus.dev instead
// (N.opbus.dev/record, N.opbus.dev/Ready…), so that two operators on the
// same objects keep apart.
const (
	// AnnotationRecord holds the bus's record of the object: the digests
	// of the values its handlers last handled, its status slots, named
	// values and retry counters, as JSON. An empty value means "no record
	// yet": the adapter writes it when it first sees an object, so that
	// later writes of the record never make metadata.annotations appear.
	AnnotationRecord = "opbus.dev/record"
	// AnnotationStatus holds the overall status, as JSON
	// {"level":"blocked","message":"…"}, on objects whose status
	// subresource belongs to someone else (see [StatusAnnotation]).
	AnnotationStatus = "opbus.dev/status"
	// Finalizer is the finalizer the adapter adds to objects of a
	// [Resource] with Finalizer set, so that their delete handlers run even
	// when the operator was down while they were deleted.
	Finalizer = "opbus.dev/cleanup"
	// ConditionReady is the type of the summary condition written on
	// custom resources: True when the overall level is active.
	ConditionReady = "Ready"
)

// ListKeys identifies the elements of the usual Kubernetes lists by a field,
// so that a diff says status.containerStatuses[name=app].state rather than
// status.containerStatuses[0].state, and a reordering alone is no change.
// Each key matches a list of that name at any depth. volumeMounts are keyed
// by mountPath, not name: one volume may be mounted at several paths, and
// mountPath is the key Kubernetes itself merges them by. [Source.BusOptions]
// puts these in [opbus.Options].ListKeys.
var ListKeys = map[string]string{
	"containers":                 "name",
	"initContainers":             "name",
	"ephemeralContainers":        "name",
	"containerStatuses":          "name",
	"initContainerStatuses":      "name",
	"ephemeralContainerStatuses": "name",
	"conditions":                 "type",
	"env":                        "name",
	"ports":                      "containerPort",
	"volumes":                    "name",
	"volumeMounts":               "mountPath",
}

// Ignore lists the per-write noise of Kubernetes objects that no handler
// should react to: what the API server changes on every write (which every
// bus ignores anyway) and the copy of the whole object that kubectl apply
// keeps in an annotation. [Source.BusOptions] adds these to
// [opbus.Options].Ignore; a [opbus.Comparer] made with them compares as
// the adapter's bus does.
var Ignore = []string{
	"metadata.resourceVersion",
	"metadata.managedFields",
	"metadata.generation",
	`metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]`,
}

// annotationPath returns the path of the annotation name.
func annotationPath(name string) string {
	return opbus.Path{opbus.MapKey("metadata"), opbus.MapKey("annotations"), opbus.MapKey(name)}.String()
}

// conditionPath returns the path of the condition of type t in
// status.conditions, which ListKeys keys by type.
func conditionPath(t string) string {
	return opbus.Path{opbus.MapKey("status"), opbus.MapKey("conditions"),
		{Kind: opbus.SegMatch, Key: "type", Value: t}}.String()
}

// finalizersPath is the list of finalizers. A list of strings cannot name
// one element by value, so a Source that adds its finalizer ignores the
// whole list; see [Resource].Finalizer.
const finalizersPath = "metadata.finalizers"

// ownWrites tells the updates that change only what the adapter writes
// on an object of one resource — its annotations, its conditions, its
// finalizer — and what the API server changes on every write. The bus
// would ignore them anyway, but each would still be queued and dispatched
// as a state; [watch] drops them instead, so that the adapter's writes
// never reach the bus.
type ownWrites struct {
	cmp        *opbus.Comparer
	conditions map[string]bool // condition types the sink writes
}

// newOwnWrites returns the ownWrites of a resource; finalizer says whether
// the adapter keeps [Finalizer] on its objects, conditions names the
// condition types it writes.
func newOwnWrites(n *names, finalizer bool, conditions map[string]bool) (*ownWrites, error) {
	ignore := []string{
		"metadata.resourceVersion",
		"metadata.managedFields",
		annotationPath(n.record),
		annotationPath(n.status),
	}
	if finalizer {
		ignore = append(ignore, finalizersPath)
	}
	cmp, err := opbus.NewComparer(&opbus.CompareOptions{Ignore: ignore, ListKeys: map[string]string{"status.conditions": "type"}})
	if err != nil {
		return nil, err
	}
	return &ownWrites{cmp: cmp, conditions: conditions}, nil
}

// only reports whether every change from old to new is at a path the
// adapter writes or in the API server's per-write noise. A condition list
// that cannot be keyed by type (two conditions of one type) is compared by
// index, and its changes count as someone else's.
func (o *ownWrites) only(old, new map[string]any) bool {
	for _, c := range o.cmp.Compare(old, new) {
		p := c.Path
		if len(p) < 3 || p[0] != opbus.MapKey("status") || p[1] != opbus.MapKey("conditions") ||
			p[2].Kind != opbus.SegMatch || p[2].Key != "type" || !o.conditions[p[2].Value] {
			return false
		}
	}
	return true
}
