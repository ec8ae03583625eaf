package k8s

import (
	"cmp"
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
)

// DeleteOptions says what [Client.Delete] deletes and how.
type DeleteOptions struct {
	// UID deletes the object only if it has this uid, so that an object
	// created again under the name since it was read is left alone. ""
	// means the uid the object given to Delete carries, if it carries
	// one; set NoUID to delete whatever holds the name.
	UID   types.UID
	NoUID bool
	// ResourceVersion deletes the object only if it is still at this
	// version, unchanged since it was read. "" means no such condition.
	ResourceVersion string
	// Propagation says what becomes of the objects the deleted one owns:
	// metav1.DeletePropagationForeground (they go first, the object
	// waits for them), DeletePropagationBackground (the object goes at
	// once, garbage collection removes them after) or
	// DeletePropagationOrphan (they stay, without the owner reference).
	// "" means the API server's default for the kind (Background for
	// most).
	Propagation metav1.DeletionPropagation
	// GracePeriodSeconds, if set, overrides the object's grace period (0
	// deletes a Pod at once).
	GracePeriodSeconds *int64
}

// Delete deletes obj, the event's object or any other: an
// *unstructured.Unstructured, a map[string]any, or any value that
// encoding/json marshals to a Kubernetes object with metadata.name (a
// typed object from a list, such as a *batchv1.Job); its apiVersion and
// kind may be left out where [Client.Apply] fills them in. The namespace
// defaults to the event object's. By default it deletes only the object
// of obj's metadata.uid (a precondition), so that a handler deleting a
// child it read never deletes another that took its name since; opts
// sets other preconditions and the propagation policy (nil means the
// defaults).
//
// An object that is already gone is no error: Delete returns nil. A
// precondition that fails (another uid, another resource version) is an
// error for which apierrors.IsConflict is true; nothing was deleted. With
// a finalizer, or Foreground propagation, the object is only marked for
// deletion when Delete returns. The handler's own later run on the same
// value does not repeat a Delete: a deleted child leaves the informer
// cache, and a later Apply of it creates it anew.
func (c *Client) Delete(ctx context.Context, obj any, opts *DeleteOptions) error {
	if c.err != nil {
		return c.err
	}
	if opts == nil {
		opts = &DeleteOptions{}
	}
	fail := func(err error) error {
		return fmt.Errorf("k8s: Delete for handler %q on %v: %w", c.ev.Handler, c.ev.Key, err)
	}
	body, err := toObject(obj)
	if err != nil {
		return fail(err)
	}
	u := &unstructured.Unstructured{Object: body}
	if err := c.s.fillTypeMeta(obj, u); err != nil {
		return fail(err)
	}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return fail(fmt.Errorf("the object has apiVersion %q and kind %q: expected both", u.GetAPIVersion(), gvk.Kind))
	}
	if u.GetName() == "" {
		return fail(fmt.Errorf("the %s object has no metadata.name: expected the name of the object to delete", gvk.Kind))
	}
	mapping, err := c.s.mapping(gvk)
	if err != nil {
		return fail(err)
	}
	ns := ""
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = cmp.Or(u.GetNamespace(), c.ev.Key.Namespace)
		if ns == "" {
			return fail(fmt.Errorf("%s %s is namespaced and names no namespace, and the event's object is cluster-scoped: set metadata.namespace", gvk.Kind, u.GetName()))
		}
	}
	do := metav1.DeleteOptions{GracePeriodSeconds: opts.GracePeriodSeconds}
	if opts.Propagation != "" {
		p := opts.Propagation
		switch p {
		case metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan:
		default:
			return fail(fmt.Errorf("propagation policy %q: expected Foreground, Background or Orphan", p))
		}
		do.PropagationPolicy = &p
	}
	id := opts.UID
	if id == "" && !opts.NoUID {
		id = u.GetUID()
	}
	if id != "" || opts.ResourceVersion != "" {
		do.Preconditions = &metav1.Preconditions{}
		if id != "" {
			do.Preconditions.UID = &id
		}
		if opts.ResourceVersion != "" {
			rv := opts.ResourceVersion
			do.Preconditions.ResourceVersion = &rv
		}
	}
	err = c.s.dyn.Resource(mapping.Resource).Namespace(ns).Delete(ctx, u.GetName(), do)
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		return fail(fmt.Errorf("deleting %s %s: %w", gvk.Kind, objectName(ns, u.GetName()), err))
	}
	c.s.forgetApplied(mapping.Resource, ns, u.GetName())
	return nil
}
