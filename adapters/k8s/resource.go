package k8s

import (
	"fmt"
	"strings"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
)

// resource is a [Resource] as the API server serves it.
type resource struct {
	cfg        Resource
	gvr        schema.GroupVersionResource
	kind       string // the objects' kind, such as "Pod"
	keyKind    string // the kind in their keys, such as "Widget.example.com"
	namespaced bool
	hasStatus  bool        // the resource has a status subresource
	mode       StatusMode  // never StatusAuto
	finalizer  bool        // Finalizer is set and a handler wants deletes
	readOnly   bool        // no handler runs on it: never written (readonly.go)
	refs       []reference // Referenced, checked (referenced.go)
	referred   []referred  // the resources its objects refer to (referenced.go)
	own        *ownWrites  // set by Source.prepare
	pruned     atomic.Bool
	client     dynamic.NamespaceableResourceInterface
	informers  map[string]cache.SharedIndexInformer // by namespace; "" for all
	shared     Informer                             // from Options.Informers, which runs it; then informers is empty
}

// discover asks the API server about cfg's resource.
func discover(disc discovery.DiscoveryInterface, dyn dynamic.Interface, cfg Resource) (*resource, error) {
	gv := cfg.GVR.GroupVersion().String()
	list, err := disc.ServerResourcesForGroupVersion(gv)
	if err != nil {
		return nil, fmt.Errorf("k8s: resource %s: discovering %s: %w", cfg.GVR.GroupResource(), gv, err)
	}
	r := &resource{cfg: cfg, gvr: cfg.GVR, client: dyn.Resource(cfg.GVR), informers: map[string]cache.SharedIndexInformer{}}
	found := false
	for _, ar := range list.APIResources {
		switch ar.Name {
		case cfg.GVR.Resource:
			found = true
			r.kind, r.namespaced = ar.Kind, ar.Namespaced
		case cfg.GVR.Resource + "/status":
			r.hasStatus = true
		}
	}
	if !found {
		return nil, fmt.Errorf("k8s: resource %s is not served by the API server in %s", cfg.GVR.Resource, gv)
	}
	if !r.namespaced && len(cfg.Namespaces) > 0 {
		return nil, fmt.Errorf("k8s: resource %s is cluster-scoped: it cannot be watched in namespaces %v", cfg.GVR.GroupResource(), cfg.Namespaces)
	}
	r.keyKind = KindOf(schema.GroupKind{Group: cfg.GVR.Group, Kind: r.kind})
	r.mode = cfg.Status
	if r.mode == StatusAuto {
		r.mode = StatusAnnotation
		if r.hasStatus && !kubernetesGroup(cfg.GVR.Group) {
			r.mode = StatusConditions
		}
	}
	if r.mode == StatusConditions && !r.hasStatus {
		return nil, fmt.Errorf("k8s: resource %s has no status subresource to write conditions to: set Status: StatusAnnotation", cfg.GVR.GroupResource())
	}
	return r, nil
}

// kubernetesGroup reports whether group is one of Kubernetes' own API
// groups, whose objects' status belongs to Kubernetes' controllers.
func kubernetesGroup(group string) bool {
	return !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
}

// namespaces returns the namespaces to run informers in; "" means all.
func (r *resource) namespaces() []string {
	if len(r.cfg.Namespaces) == 0 {
		return []string{""}
	}
	return r.cfg.Namespaces
}

// api returns the client for objects in namespace ns.
func (r *resource) api(ns string) dynamic.ResourceInterface {
	if r.namespaced {
		return r.client.Namespace(ns)
	}
	return r.client
}

// key returns the key of an object of this resource.
func (r *resource) key(u *unstructured.Unstructured) opbus.Key {
	return opbus.Key{Kind: r.keyKind, Namespace: u.GetNamespace(), Name: u.GetName()}
}

// cached returns the informer cache's copy of the object of key, which the
// caller must not modify.
func (r *resource) cached(key opbus.Key) (*unstructured.Unstructured, bool) {
	if r.shared != nil {
		return r.shared.Get(key.Namespace, key.Name)
	}
	inf, ok := r.informers[key.Namespace]
	if !ok {
		inf = r.informers[""]
	}
	if inf == nil {
		return nil, false
	}
	k := key.Name
	if key.Namespace != "" {
		k = key.Namespace + "/" + key.Name
	}
	obj, exists, err := inf.GetIndexer().GetByKey(k)
	if err != nil || !exists {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	return u, ok
}

// buildInformers creates the resource's informers, one per namespace
// watched; they start in [Source.lead].
func (r *resource) buildInformers(dyn dynamic.Interface) {
	tweak := func(o *metav1.ListOptions) {
		o.LabelSelector = r.cfg.LabelSelector
		o.FieldSelector = r.cfg.FieldSelector
	}
	for _, ns := range r.namespaces() {
		inf := dynamicinformer.NewFilteredDynamicInformer(dyn, r.gvr, ns, 0, cache.Indexers{}, tweak).Informer()
		// managedFields are ignored by every diff and are often the largest
		// part of an object: the cache does without them.
		_ = inf.SetTransform(dropManagedFields)
		r.informers[ns] = inf
	}
}

func dropManagedFields(obj any) (any, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		if m := metadata(u.Object); m != nil {
			delete(m, "managedFields")
		}
	}
	return obj, nil
}
