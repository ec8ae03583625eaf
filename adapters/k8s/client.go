package k8s

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"

	"github.com/opbus/opbus"
)

// Client writes for one handler run: it applies the children of the
// event's object and the object's own status fields, with server-side
// apply under a field manager of the handler's own ([FieldManager]).
// Get one from [Source.Client] inside a handler; it is valid while the
// Source runs. A Client whose event cannot be written for returns the
// reason from every method.
type Client struct {
	s       *Source
	ev      *opbus.Event
	r       *resource // the resource of the event's object
	manager string
	writes  []opbus.Path
	err     error // returned by every method
	gone    error // returned by Apply and ApplyStatus: a delete event's
}

// Client returns a client that writes for the handler run of ev: ev must
// be an event the bus gave a handler of this Source's bus, while
// [Source.Run] runs; otherwise every method of the Client returns an error
// saying which. For a delete event (the object is gone) Get, List and
// Delete work, and Apply and ApplyStatus return an error: a delete handler
// has nothing to apply children to (garbage collection removes them).
func (s *Source) Client(ev *opbus.Event) *Client {
	c := &Client{s: s, ev: ev}
	c.err = c.prepare()
	return c
}

// prepare checks that c can write and finds what it writes with.
func (c *Client) prepare() error {
	ev, s := c.ev, c.s
	if ev == nil || ev.Handler == "" {
		return errors.New("k8s: Client: the event names no handler: expected an event the bus gave a handler")
	}
	if ev.New == nil {
		c.gone = fmt.Errorf("k8s: Client for handler %q on %v: the object is gone (a %v event): nothing can be applied for it; owned objects go by garbage collection", ev.Handler, ev.Key, ev.Type)
	}
	s.mu.Lock()
	w, kinds := s.watch, s.kinds
	s.mu.Unlock()
	if w == nil {
		return fmt.Errorf("k8s: Client for handler %q on %v: the Source is not running: use the client inside a handler while Run runs", ev.Handler, ev.Key)
	}
	c.r = kinds[ev.Key.Kind]
	if c.r == nil {
		return fmt.Errorf("k8s: Client for handler %q on %v: kind %q is not one the Source watches", ev.Handler, ev.Key, ev.Key.Kind)
	}
	sub, ok := s.subscription(w.bus, ev.Handler)
	if !ok {
		return fmt.Errorf("k8s: Client for handler %q on %v: no such handler on the Source's bus", ev.Handler, ev.Key)
	}
	c.writes = sub.Writes
	c.manager = FieldManager(s.name, ev.Handler)
	return nil
}

// subscription returns the registered handler id of bus.
func (s *Source) subscription(bus *opbus.Bus, id string) (opbus.Subscription, bool) {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	if s.applied.subs == nil || s.applied.bus != bus {
		s.applied.bus, s.applied.subs = bus, map[string]opbus.Subscription{}
		for _, sub := range bus.Subscriptions() {
			s.applied.subs[sub.ID] = sub
		}
	}
	sub, ok := s.applied.subs[id]
	return sub, ok
}

// FieldManager returns the field manager under which the handler of ID
// handler, of an operator named name ([Options].Name, "" for the
// default), applies with a [Client]: "<name>/<handler>", or, past the
// API server's 128 bytes or with characters it refuses, a shortened form
// ending with 8 hexadecimal digits of its SHA-256. It differs from the
// adapter's own field manager, the name alone.
func FieldManager(name, handler string) string {
	if name == "" {
		name = defaultName
	}
	m := name + "/" + handler
	ok := len(m) <= maxFieldManager
	for _, r := range m {
		if r < 0x20 || r == 0x7f || r >= 0x80 {
			ok = false
		}
	}
	if ok {
		return m
	}
	var b strings.Builder
	for _, r := range m {
		if r < 0x20 || r >= 0x7f {
			r = '-'
		}
		if b.Len() >= maxFieldManager-9 {
			break
		}
		b.WriteRune(r)
	}
	sum := sha256.Sum256([]byte(m))
	return b.String() + "-" + hex.EncodeToString(sum[:4])
}

// maxFieldManager is the API server's bound on a field manager's length.
const maxFieldManager = 128

// Apply creates or updates the child obj of the event's object with
// server-side apply (under the handler's [FieldManager], taking over the
// fields other managers hold, but not those another handler of the
// operator applied with other values: see below), and
// returns the object as the API server holds it. obj is an
// *unstructured.Unstructured, a map[string]any, or any value that
// encoding/json marshals to a Kubernetes object with apiVersion, kind and
// metadata.name (a client-go apply configuration, or a typed object; nulls
// are dropped, and a typed object's empty status). A typed object whose
// TypeMeta is empty gets its apiVersion and kind from [Options].Scheme,
// from client-go's scheme of Kubernetes' own types (a *batchv1.Job), or
// from the watched resource whose kind is its Go type's name (a custom
// resource's *Widget); with none of them it is an error naming the type.
// The namespace defaults to the event object's (a namespaced child of a
// cluster-scoped object must name one); a child in another
// namespace, or a cluster-scoped child of a namespaced object, is refused
// (an owner reference cannot name either). Unless metadata.ownerReferences
// already names a controller, Apply adds one naming the event's object
// (controller and blockOwnerDeletion true), so the child goes with its
// owner and, watched as an Owned [Resource], relates to it.
//
// Apply sends nothing when this Client's handler applied the same obj to
// the same child last, in this process, and the informer cache of a
// watched resource still holds every field of it with equal values: a
// handler that runs again on an unchanged input causes no write. A child
// of a resource the Source does not watch is applied at every run (watch
// it as an Owned [Resource]); so is a typed object with zero values that
// the API server replaces by defaults (a Service port's targetPort 0),
// which an apply configuration leaves out; and so is a field the API
// server never stores as sent, such as a Secret's stringData (apply data). A field the handler stops
// applying is removed by the API server (it owned it) without touching
// other managers' fields.
//
// Apply first applies without Force. A field another manager holds with
// another value (kubectl, another controller) is then taken over with a
// second, forced apply, as controllers do; but a field another handler
// of this operator applied with another value is an error naming that
// handler, and nothing is forced: two handlers forcing one field would
// take it from each other at every run, each run changing what the other
// reads, a write loop. The handler fails and is retried on its backoff.
func (c *Client) Apply(ctx context.Context, obj any) (*unstructured.Unstructured, error) {
	if err := cmp.Or(c.gone, c.err); err != nil {
		return nil, err
	}
	body, err := toObject(obj)
	if err != nil {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	u := &unstructured.Unstructured{Object: body}
	if err := c.s.fillTypeMeta(obj, u); err != nil {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" || u.GetName() == "" {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: the object has apiVersion %q, kind %q and name %q: expected all three", c.ev.Handler, c.ev.Key, u.GetAPIVersion(), gvk.Kind, u.GetName())
	}
	mapping, err := c.s.mapping(gvk)
	if err != nil {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	owner := &unstructured.Unstructured{Object: c.ev.New}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if u.GetNamespace() == "" {
			u.SetNamespace(owner.GetNamespace())
		}
		if u.GetNamespace() == "" {
			return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %s %s is namespaced and names no namespace, and its owner is cluster-scoped: set metadata.namespace", c.ev.Handler, c.ev.Key, gvk.Kind, u.GetName())
		}
		if owner.GetNamespace() != "" && u.GetNamespace() != owner.GetNamespace() {
			return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %s %s/%s is in another namespace than its owner: owner references cannot cross namespaces", c.ev.Handler, c.ev.Key, gvk.Kind, u.GetNamespace(), u.GetName())
		}
	} else {
		u.SetNamespace("")
		if owner.GetNamespace() != "" && !hasController(u) {
			return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %s %s is cluster-scoped and its owner is namespaced: a cluster-scoped object cannot have a namespaced owner (garbage collection refuses the reference)", c.ev.Handler, c.ev.Key, gvk.Kind, u.GetName())
		}
	}
	if !hasController(u) {
		yes := true
		u.SetOwnerReferences(append(u.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: owner.GetAPIVersion(), Kind: owner.GetKind(), Name: owner.GetName(), UID: owner.GetUID(),
			Controller: &yes, BlockOwnerDeletion: &yes,
		}))
	}
	data, err := json.Marshal(u.Object)
	if err != nil {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	child := appliedKey{manager: c.manager, gvr: mapping.Resource, namespace: u.GetNamespace(), name: u.GetName()}
	if cur, ok := c.s.unchanged(child, string(data), u.Object); ok {
		return cur, nil
	}
	api := c.s.dyn.Resource(mapping.Resource).Namespace(u.GetNamespace())
	out, err := c.applyChild(ctx, api, u.GetName(), data)
	c.s.sent(child, string(data), err)
	if err != nil {
		return nil, fmt.Errorf("k8s: Apply for handler %q on %v: applying %s %s: %w", c.ev.Handler, c.ev.Key, gvk.Kind, objectName(u.GetNamespace(), u.GetName()), err)
	}
	return out, nil
}

// ApplyStatus sets fields of the event's own object's status with
// server-side apply under the handler's [FieldManager], through the
// status subresource (with a JSON merge patch of the object, for a
// resource without one): status holds the fields below status, such as
// {"readyReplicas": 3}. As with server-side apply, status is the whole of
// what the handler wants set: a field it set before and leaves out, or
// sets to nil, is given up, and removed unless another manager set it
// too; an empty (or nil) status gives up every field the handler set.
// Without a status subresource the handler's last fields are known from
// this process only: after a restart, leave a field out with a nil to
// remove it. Every field it sets must lie under a path of the
// handler's [opbus.On].Writes, so that the write does not run the handler
// again; one that does not is an error naming it. The write never lands
// on an object that took the name since (it carries the resource version
// of a state of the event's uid; for an object that is gone the error
// wraps [ErrGone]); it leaves the fields of other managers alone, among them
// the adapter's conditions. As with Apply, nothing is sent when the same
// status was applied last and the informer cache holds it.
func (c *Client) ApplyStatus(ctx context.Context, status map[string]any) error {
	if err := cmp.Or(c.gone, c.err); err != nil {
		return err
	}
	raw, err := toJSONValue(status)
	if err != nil {
		return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	if m, ok := raw.(map[string]any); !ok && raw != nil {
		return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: the status is %T: expected a JSON object", c.ev.Handler, c.ev.Key, status)
	} else if len(m) > 0 {
		if err := c.coveredByWrites(raw); err != nil {
			return err
		}
	}
	if raw == nil {
		raw = map[string]any{}
	}
	st := dropNulls(clone(raw))
	owner := &unstructured.Unstructured{Object: c.ev.New}
	body := map[string]any{
		"apiVersion": owner.GetAPIVersion(), "kind": owner.GetKind(),
		"metadata": map[string]any{"name": owner.GetName()},
		"status":   st,
	}
	if ns := owner.GetNamespace(); ns != "" {
		body["metadata"].(map[string]any)["namespace"] = ns
	}
	data, err := json.Marshal(body)
	if err != nil {
		return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	self := appliedKey{manager: c.manager, gvr: c.r.gvr, namespace: owner.GetNamespace(), name: owner.GetName(), status: true}
	holds := c.r.mode == StatusConditions && c.r.hasStatus && !c.r.readOnly
	if _, ok := c.s.unchanged(self, string(data), body); ok {
		if holds {
			c.s.sink.unhold(c.ev.Key, c.manager)
		}
		return nil
	}
	if holds {
		// Held for the write of the pass, with its conditions (heldstatus.go).
		if cur, ok := c.r.cached(c.ev.Key); !ok || cur.GetUID() != owner.GetUID() {
			return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: the object of uid %s is gone: %w", c.ev.Handler, c.ev.Key, owner.GetUID(), ErrGone)
		}
		stm, _ := st.(map[string]any)
		c.s.sink.hold(c.ev.Key, &heldStatus{handler: c.ev.Handler, self: self, uid: string(owner.GetUID()), status: stm, data: string(data),
			gen: owner.GetGeneration(), rv: owner.GetResourceVersion()})
		return nil
	}
	if c.r.hasStatus {
		err = c.applyStatus(ctx, owner, body)
	} else {
		// No status subresource: an apply of the main resource would
		// create the object were it gone; a merge patch never does, and
		// its metadata.uid is a precondition there.
		// Fields this handler set last and leaves out now go, as under
		// server-side apply: they are nulls in the patch.
		merge := withGivenUp(raw, c.s.lastMerged(self))
		var patch []byte
		if patch, err = json.Marshal(map[string]any{"metadata": map[string]any{"uid": string(owner.GetUID())}, "status": merge}); err == nil {
			_, err = c.r.api(owner.GetNamespace()).Patch(ctx, owner.GetName(), types.MergePatchType, patch, metav1.PatchOptions{FieldManager: c.manager})
		}
		if err == nil {
			c.s.mergedNow(self, st)
		}
	}
	c.s.sent(self, string(data), err)
	if err != nil {
		return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	return nil
}

// applyStatus applies body to the status subresource of owner's object.
// The API server takes a metadata.uid there as no precondition (the
// status strategy copies the stored metadata over the request's), so the
// apply carries the resource version of a state of that uid: from the
// informer cache, or read again after a conflict.
func (c *Client) applyStatus(ctx context.Context, owner *unstructured.Unstructured, body map[string]any) error {
	id := owner.GetUID()
	rv := owner.GetResourceVersion()
	if cur, ok := c.r.cached(c.ev.Key); ok && cur.GetUID() == id {
		rv = cur.GetResourceVersion()
	}
	api := c.r.api(owner.GetNamespace())
	force := true
	for attempt := 0; ; attempt++ {
		body["metadata"].(map[string]any)["resourceVersion"] = rv
		data, err := json.Marshal(body)
		if err != nil {
			return err
		}
		_, err = api.Patch(ctx, owner.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: c.manager, Force: &force}, "status")
		if !apierrors.IsConflict(err) || attempt == maxStatusConflicts {
			return err
		}
		cur, gerr := api.Get(ctx, owner.GetName(), metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(gerr):
			return fmt.Errorf("the object of uid %s is gone: %w", id, ErrGone)
		case gerr != nil:
			return gerr
		case cur.GetUID() != id:
			return fmt.Errorf("the object of uid %s is gone, %s took its name: %w", id, cur.GetUID(), ErrGone)
		}
		rv = cur.GetResourceVersion()
	}
}

// maxStatusConflicts bounds how often ApplyStatus reads the object again
// after a conflict before it returns the conflict.
const maxStatusConflicts = 5

// ErrGone is wrapped by the error of a [Client] write for an object that
// is gone: deleted, or deleted and created again under its name (a new
// uid). Nothing was written.
var ErrGone = errors.New("k8s: the event's object is gone")

// coveredByWrites returns an error naming the first field of status that
// no path of the handler's Writes covers.
func (c *Client) coveredByWrites(status any) error {
	var bad opbus.Path
	var walk func(at opbus.Path, v any) bool
	walk = func(at opbus.Path, v any) bool {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if !walk(append(slices.Clip(at), opbus.MapKey(k)), m[k]) {
					return false
				}
			}
			return true
		}
		leaf := opbus.Diff{{Op: opbus.OpAdd, Path: at}}
		if !slices.ContainsFunc(c.writes, func(w opbus.Path) bool { return len(at) >= len(w) && leaf.Touches(w) }) {
			bad = at
			return false
		}
		return true
	}
	if walk(opbus.Path{opbus.MapKey("status")}, status) {
		return nil
	}
	return fmt.Errorf("k8s: ApplyStatus for handler %q on %v: %s is not under the handler's On.Writes %v: add it to On.Writes, so that the handler's own write does not run it again", c.ev.Handler, c.ev.Key, bad, c.writes)
}

// hasController reports whether u's owner references name a controller.
func hasController(u *unstructured.Unstructured) bool {
	return slices.ContainsFunc(u.GetOwnerReferences(), func(r metav1.OwnerReference) bool {
		return r.Controller != nil && *r.Controller
	})
}

// toObject returns obj as a JSON-like document of its own, without nulls
// and without a typed object's empty status.
func toObject(obj any) (map[string]any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if u == nil {
			return nil, errors.New("nil object")
		}
		obj = u.Object
	}
	v, err := toValue(obj)
	if err != nil {
		return nil, err
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the object is %T: expected one that marshals to a JSON object", obj)
	}
	if st, ok := m["status"].(map[string]any); ok && len(st) == 0 {
		delete(m, "status")
	}
	return m, nil
}

// toJSONValue returns v marshalled and decoded as JSON, whole numbers as
// int64, nulls kept.
func toJSONValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return out, nil
}

// clone returns a deep copy of a JSON-like value.
func clone(v any) any {
	switch x := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(x))
		for k, e := range x {
			m[k] = clone(e)
		}
		return m
	case []any:
		l := make([]any, len(x))
		for i, e := range x {
			l[i] = clone(e)
		}
		return l
	}
	return v
}

// withGivenUp returns now with a null for each member of last's maps that
// now lacks, at any depth: a merge patch that removes them.
func withGivenUp(now, last any) any {
	n, ok1 := now.(map[string]any)
	l, ok2 := last.(map[string]any)
	if !ok1 || !ok2 {
		return now
	}
	out := make(map[string]any, len(n)+len(l))
	for k, v := range n {
		out[k] = withGivenUp(v, l[k])
	}
	for k := range l {
		if _, ok := n[k]; !ok {
			out[k] = nil
		}
	}
	return out
}

// toValue returns v marshalled and decoded as JSON, whole numbers as
// int64 as in the informers' objects, without nulls.
func toValue(v any) (any, error) {
	data, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	if err := utiljson.Unmarshal(data, &out); err != nil {
		return nil, err
	}
	return dropNulls(out), nil
}

// dropNulls removes null members of maps, at any depth.
func dropNulls(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for _, k := range slices.Collect(maps.Keys(x)) {
			if x[k] == nil {
				delete(x, k)
				continue
			}
			x[k] = dropNulls(x[k])
		}
	case []any:
		for i := range x {
			x[i] = dropNulls(x[i])
		}
	}
	return v
}

// objectName returns ns/name, or name for a cluster-scoped object.
func objectName(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

// appliedKey identifies what one field manager applied to one object (or
// its status).
type appliedKey struct {
	manager   string
	gvr       schema.GroupVersionResource
	namespace string
	name      string
	status    bool
}

// unchanged reports whether the apply of body (data encoded) to k can be
// skipped: k's manager applied the same data last, and the informer cache
// of a watched resource holds every field of body with equal values. It
// returns the cached object. It counts what it skips.
func (s *Source) unchanged(k appliedKey, data string, body map[string]any) (*unstructured.Unstructured, bool) {
	s.applied.mu.Lock()
	last, ok := s.applied.last[k.object()][k.who()]
	s.applied.mu.Unlock()
	if !ok || last != sha256.Sum256([]byte(data)) {
		return nil, false
	}
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	for _, r := range kinds {
		if r.gvr != k.gvr {
			continue
		}
		cur, ok := r.cached(opbus.Key{Kind: r.keyKind, Namespace: k.namespace, Name: k.name})
		if !ok || !holds(cur.Object, body) {
			return nil, false
		}
		s.applied.skipped.Add(1)
		return cur.DeepCopy(), true
	}
	return nil, false
}

// sent notes an apply of data to k that returned err, and counts it.
func (s *Source) sent(k appliedKey, data string, err error) {
	s.applied.sent.Add(1)
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	watched := slices.ContainsFunc(slices.Collect(maps.Values(kinds)), func(r *resource) bool { return r.gvr == k.gvr })
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	if s.applied.last == nil {
		s.applied.last = map[appliedObject]map[appliedBy][32]byte{}
	}
	o, by := k.object(), k.who()
	if err != nil || !watched {
		// Nothing to skip by: an apply of a resource no informer
		// watches is never skipped, so it is not kept.
		delete(s.applied.last[o], by)
		if len(s.applied.last[o]) == 0 {
			delete(s.applied.last, o)
		}
		return
	}
	if s.applied.last[o] == nil {
		s.applied.last[o] = map[appliedBy][32]byte{}
	}
	s.applied.last[o][by] = sha256.Sum256([]byte(data))
}

// forgetSent forgets what k's manager applied to k's object last: an
// apply of it is sent in any case.
func (s *Source) forgetSent(k appliedKey) {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	o := k.object()
	delete(s.applied.last[o], k.who())
	if len(s.applied.last[o]) == 0 {
		delete(s.applied.last, o)
	}
}

// forgetApplied drops what was applied to the object of gvr, namespace
// and name, which is gone: an apply to it is sent in any case (the cache
// no longer holds it), and so what the Source keeps stays bounded by the
// objects that exist.
func (s *Source) forgetApplied(gvr schema.GroupVersionResource, namespace, name string) {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	delete(s.applied.last, appliedObject{gvr: gvr, namespace: namespace, name: name})
}

// appliedObject is an object applied to; appliedBy, who applied to it and
// whether to its status.
type (
	appliedObject struct {
		gvr       schema.GroupVersionResource
		namespace string
		name      string
	}
	appliedBy struct {
		manager string
		status  bool
	}
)

func (k appliedKey) object() appliedObject {
	return appliedObject{gvr: k.gvr, namespace: k.namespace, name: k.name}
}

func (k appliedKey) who() appliedBy { return appliedBy{manager: k.manager, status: k.status} }

// holds reports whether have holds every field of want with an equal
// value: maps by key, lists element by element with the same length.
func holds(have, want any) bool {
	switch w := want.(type) {
	case map[string]any:
		h, ok := have.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range w {
			hv, ok := h[k]
			if !ok || !holds(hv, v) {
				return false
			}
		}
		return true
	case []any:
		h, ok := have.([]any)
		if !ok || len(h) != len(w) {
			return false
		}
		for i := range w {
			if !holds(h[i], w[i]) {
				return false
			}
		}
		return true
	}
	return len(opbus.Compare(have, want)) == 0
}

// mapping returns the resource of gvk, from discovery, cached; a kind
// the cache does not know makes it read discovery again, once.
func (s *Source) mapping(gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	m, err := s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		s.mapper.Reset()
		m, err = s.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	}
	if err != nil {
		return nil, fmt.Errorf("finding the resource of %s: %w", gvk, err)
	}
	return m, nil
}

// applies is what the Source's Clients applied, for skipping repeats.
type applies struct {
	sent, skipped atomic.Int64

	mu   sync.Mutex
	last map[appliedObject]map[appliedBy][32]byte // the SHA-256 of the data last applied, by where and who; pruned when the object goes
	bus  *opbus.Bus
	subs map[string]opbus.Subscription // the bus's handlers by ID

	merged map[appliedKey]any // the status each handler last set by a merge patch (no status subresource)
}

// lastMerged returns the status k's manager last set with a merge patch.
func (s *Source) lastMerged(k appliedKey) any {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	return s.applied.merged[k]
}

// mergedNow notes the status k's manager has set with a merge patch.
func (s *Source) mergedNow(k appliedKey, st any) {
	s.applied.mu.Lock()
	defer s.applied.mu.Unlock()
	if s.applied.merged == nil {
		s.applied.merged = map[appliedKey]any{}
	}
	s.applied.merged[k] = st
}
