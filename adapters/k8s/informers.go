package k8s

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// Informers gives a [Source] the informers of its resources instead of the
// ones it would build and run itself, for adapters such as ctrlmgr, which
// takes them from a controller-runtime manager's cache. Set it as
// [Options].Informers.
//
// What such informers watch — namespaces, selectors, transforms — is the
// provider's to configure: a Source with Informers refuses a [Resource]
// with Namespaces, LabelSelector or FieldSelector, which it could not
// honour.
type Informers interface {
	// Informer returns the informer of the objects of resource gvr, whose
	// kind is gvk, holding them as *unstructured.Unstructured. The provider
	// runs it, before or after Informer returns, and stops it after the
	// Source's Run has returned; the Source adds its event handlers and
	// removes them when it stops. ctx is Run's: its end abandons the call.
	Informer(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) (Informer, error)
}

// Informer is what a [Source] needs of an informer that [Informers]
// provides: to add and remove its event handlers, as on a client-go
// cache.SharedInformer, and to read the objects the informer holds.
type Informer interface {
	AddEventHandler(handler cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error)
	RemoveEventHandler(handle cache.ResourceEventHandlerRegistration) error
	// Get returns the informer's object of namespace ("" for a
	// cluster-scoped object) and name, and whether it holds one. The
	// caller does not modify it. It is called concurrently, and often: a
	// few times for each state handled.
	Get(namespace, name string) (*unstructured.Unstructured, bool)
}

// An informer of a kind that refers to another through
// [Resource].Referenced must also index: have AddIndexers and GetIndexer,
// as client-go's cache.SharedIndexInformer does; without them Run
// refuses the Referenced resource, whose referrers it could not find.

// validateInformers refuses what a Source cannot honour when informers
// come from o.Informers.
func (o *Options) validateInformers() error {
	if o.Informers == nil {
		return nil
	}
	for _, r := range o.Resources {
		if len(r.Namespaces) > 0 || r.LabelSelector != "" || r.FieldSelector != "" {
			return fmt.Errorf("k8s: resource %s: Namespaces %v, LabelSelector %q and FieldSelector %q must be empty when Options.Informers provides the informers, which watch what their provider is configured to watch "+
				"(for a controller-runtime manager, its cache.Options: DefaultNamespaces, ByObject)",
				r.GVR.GroupResource(), r.Namespaces, r.LabelSelector, r.FieldSelector)
		}
	}
	return nil
}

// takeInformer sets r's informer from the provider.
func (r *resource) takeInformer(ctx context.Context, p Informers) error {
	gvk := r.gvr.GroupVersion().WithKind(r.kind)
	inf, err := p.Informer(ctx, r.gvr, gvk)
	if err != nil {
		return fmt.Errorf("k8s: resource %s: getting its informer from Options.Informers: %w", r.gvr.GroupResource(), err)
	}
	if inf == nil {
		return fmt.Errorf("k8s: resource %s: Options.Informers returned no informer and no error", r.gvr.GroupResource())
	}
	r.shared = inf
	return nil
}
