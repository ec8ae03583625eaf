package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/opbus/opbus"
)

// claimWorkers is how many objects are claimed at once.
const claimWorkers = 2

// watch feeds a bus from the informers of one run of a Source.
//
// An object reaches the bus only once it is claimed: it carries
// [AnnotationRecord] (empty at first), [Finalizer] if its resource wants
// one, and status.conditions if the adapter writes conditions there. The
// adapter writes what is missing before the bus sees the object, so that
// none of its later writes makes a map or list appear that was absent
// when a handler's value was digested: a value whose digest changed only
// because of the adapter's own bookkeeping would run handlers again.
type watch struct {
	s      *Source
	sh     *sharder // with Options.Shards, nil otherwise
	bus    *opbus.Bus
	ctx    context.Context // the run's; ends when the bus stops taking work
	claims workqueue.TypedRateLimitingInterface[claim]

	mu       sync.Mutex
	deleting map[string]bool // UIDs whose deletion the bus was given
}

// claim is an object to claim or release.
type claim struct {
	r   *resource
	key opbus.Key
}

// lead runs the informers and the bus until ctx ends.
func (s *Source) lead(ctx context.Context, bus *opbus.Bus) error {
	if ctx.Err() != nil {
		return nil
	}
	begin := time.Now()
	w := &watch{
		s: s, bus: bus, ctx: ctx,
		claims: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[claim](),
			workqueue.TypedRateLimitingQueueConfig[claim]{Name: "opbus-claims"}),
		deleting: map[string]bool{},
	}
	s.mu.Lock()
	kinds := s.kinds
	w.sh = s.sharder
	s.watch = w
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.watch = nil
		s.mu.Unlock()
	}()
	s.probe.set(func(p *probeState) { p.leading = true })
	s.opts.Metrics.leading(s, bus, true)
	defer s.opts.Metrics.leading(s, bus, false)
	defer s.probe.set(func(p *probeState) { p.leading, p.synced = false, false })

	// Informers and claims stop after the bus has drained, which may
	// still read the caches and write.
	ictx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	var wg sync.WaitGroup
	var own []cache.InformerSynced // the informers this Source runs
	for _, r := range kinds {
		for ns, inf := range r.informers {
			_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
				if !errors.Is(err, context.Canceled) {
					s.log.Warn("k8s: watch failed; retrying", "resource", r.gvr.String(), "namespace", ns, "err", err)
				}
			})
			own = append(own, inf.HasSynced)
			wg.Go(func() { inf.RunWithContext(ictx) })
		}
	}
	for range claimWorkers {
		wg.Go(func() { w.claimLoop(ictx) })
	}
	wg.Go(func() { s.failures.run(ictx) })

	// The bus dispatches once every informer's first list is queued, as
	// controller-runtime starts its workers after its caches sync, and the
	// objects that relate to others are queued first: an object's first
	// run after a restart then sees every related object, not the few
	// observed before it, and does not differ from the value it handled
	// before (rule K29). The caches are full before the first handler is
	// added, so that the indexes of referring objects are too
	// (Resource.Referenced); Options.Informers' are synced already.
	cache.WaitForCacheSync(ctx.Done(), own...)
	var first, rest []*resource
	for _, r := range kinds {
		if r.readOnly || r.cfg.Owned || len(r.cfg.Referenced) > 0 {
			first = append(first, r)
		} else {
			rest = append(rest, r)
		}
	}
	n := 0
	for _, phase := range [][]*resource{first, rest} {
		var synced []cache.InformerSynced
		for _, r := range phase {
			regs, err := w.addHandlers(r)
			for _, reg := range regs {
				synced = append(synced, reg.HasSynced)
				if r.shared != nil {
					// Options.Informers' provider runs the informer: only
					// the handler is the Source's, removed once the bus has
					// drained.
					defer func() { _ = r.shared.RemoveEventHandler(reg) }()
				}
			}
			if err != nil {
				stop()
				wg.Wait()
				return err
			}
		}
		n += len(synced)
		cache.WaitForCacheSync(ctx.Done(), synced...)
	}
	if ctx.Err() == nil {
		// Every object of the first lists that the adapter claimed is
		// observed now: the relist ends before the bus dispatches (rule 34),
		// so an owner whose related objects changed or went while no bus
		// ran is handled at once, on the view as it is.
		bus.Synced()
		s.probe.set(func(p *probeState) { p.synced = true })
		s.log.Info("k8s: watching", "resources", len(kinds), "informers", n, "took", time.Since(begin))
	}
	err := bus.Run(ctx)
	w.claims.ShutDown()
	stop()
	wg.Wait()
	return err
}

// addHandlers adds w's handlers to r's informers and returns their
// registrations, whose HasSynced reports that they were given every
// object of the informer's first list, whether the informer started now
// or earlier.
func (w *watch) addHandlers(r *resource) ([]cache.ResourceEventHandlerRegistration, error) {
	if r.shared != nil {
		reg, err := r.shared.AddEventHandler(w.handlers(r))
		if err != nil {
			return nil, fmt.Errorf("k8s: resource %s: adding a handler to the informer of Options.Informers: %w", r.gvr.GroupResource(), err)
		}
		return []cache.ResourceEventHandlerRegistration{reg}, nil
	}
	var regs []cache.ResourceEventHandlerRegistration
	for _, inf := range r.informers {
		reg, err := inf.AddEventHandler(w.handlers(r))
		if err != nil {
			return regs, fmt.Errorf("k8s: resource %s: adding a handler to its informer: %w", r.gvr.GroupResource(), err)
		}
		regs = append(regs, reg)
	}
	return regs, nil
}

// handlers returns the event handlers of r's objects.
func (w *watch) handlers(r *resource) cache.ResourceEventHandlerFuncs {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			if u, ok := obj.(*unstructured.Unstructured); ok {
				w.changed(r, nil, u)
			}
		},
		UpdateFunc: func(oldObj, newObj any) {
			old, _ := oldObj.(*unstructured.Unstructured)
			u, ok := newObj.(*unstructured.Unstructured)
			if ok {
				w.changed(r, old, u)
			}
		},
		DeleteFunc: func(obj any) { w.deleted(r, obj) },
	}
}

// changed handles a new state of an object: an added one (old is nil) or
// an updated one.
func (w *watch) changed(r *resource, old, u *unstructured.Unstructured) {
	defer w.reRelate(r, old, u)
	if r.readOnly {
		w.observeReadOnly(r, old, u)
		return
	}
	key := r.key(u)
	w.s.store.settle(key, u.GetResourceVersion())
	obj := u.Object
	if w.sh != nil && !w.sh.note(key, obj) {
		if r.seenEverywhere() && w.claimed(r, obj) && (old == nil || !w.claimed(r, old.Object) || !r.own.only(old.Object, obj)) {
			w.relate(w.bus.Observe(w.ctx, key, obj), key)
		}
		return // another replica's
	}
	if isDeleting(obj) {
		id := uid(obj)
		if w.isDeleting(id) {
			return // the bus has its deletion
		}
		if r.finalizer {
			if w.s.names.hasFinalizer(obj) && w.s.names.hasRecord(obj) {
				// Our finalizer holds it: the delete handlers run now.
				w.markDeleting(id)
				w.observe(w.bus.ObserveDelete(w.ctx, key, obj), key)
				return
			}
			if w.s.names.hasFinalizer(obj) {
				w.claims.Add(claim{r, key}) // handled before the record went: release it
			}
			if !w.s.names.hasRecord(obj) {
				return
			}
			// Our finalizer is missing: ordinary states until it is gone.
		} else if w.s.names.hasFinalizer(obj) {
			w.claims.Add(claim{r, key}) // left by an earlier configuration
		}
	} else if !w.claimed(r, obj) {
		w.claims.Add(claim{r, key})
		return
	} else if w.lost(r, key, obj) {
		w.claims.Add(claim{r, key}) // another writer removed or changed what the adapter keeps: write it back
	}
	if old == nil || !w.claimed(r, old.Object) {
		w.observe(w.bus.Observe(w.ctx, key, obj), key)
		return
	}
	if r.own.only(old.Object, obj) {
		return // the adapter's own write, or a resync
	}
	w.observe(w.bus.ObserveUpdate(w.ctx, key, old.Object, obj), key)
}

// deleted handles an object that is gone. An object that no longer
// carries AnnotationRecord is not given to the bus: the adapter either
// never claimed it, or handled its deletion when it began (under the
// finalizer) and removed the record then.
func (w *watch) deleted(r *resource, obj any) {
	var u *unstructured.Unstructured
	var key opbus.Key
	switch o := obj.(type) {
	case *unstructured.Unstructured:
		u, key = o, r.key(o)
	case cache.DeletedFinalStateUnknown:
		if uo, ok := o.Obj.(*unstructured.Unstructured); ok {
			u, key = uo, r.key(uo)
		} else {
			ns, name, err := cache.SplitMetaNamespaceKey(o.Key)
			if err != nil {
				return
			}
			key = opbus.Key{Kind: r.keyKind, Namespace: ns, Name: name}
		}
	default:
		return
	}
	w.s.store.forget(key)
	w.s.forgetApplied(r.gvr, key.Namespace, key.Name)
	w.s.sink.forgetHeld(key)
	if u != nil {
		defer w.reRelate(r, u, nil)
	}
	if w.sh != nil && !w.sh.ownsDeleted(key, u) {
		if r.seenEverywhere() {
			var last map[string]any
			if u != nil {
				last = u.Object
			}
			w.relate(w.bus.ObserveDelete(w.ctx, key, last), key)
		}
		return // another replica's
	}
	if u == nil {
		w.observe(w.bus.ObserveDelete(w.ctx, key, nil), key)
		return
	}
	if r.readOnly {
		w.observe(w.bus.ObserveDelete(w.ctx, key, u.Object), key)
		return
	}
	if w.unmarkDeleting(uid(u.Object)) || !w.s.names.hasRecord(u.Object) {
		return
	}
	w.observe(w.bus.ObserveDelete(w.ctx, key, u.Object), key)
}

// observe logs a state the bus did not take.
func (w *watch) observe(err error, key opbus.Key) {
	if err != nil && w.ctx.Err() == nil {
		w.s.log.Warn("k8s: the bus did not take a state", "key", key.String(), "err", err)
	}
}

// relate logs a state of a referenced object of another replica's that
// the bus did not take, but for ErrNotOwned: under Shards, a replica gives
// its bus the changes of the referenced objects that other replicas
// handle (see [resource.seenEverywhere]) only for the related views of
// the referrers it handles, to which the bus passes them on before it
// refuses the object itself.
func (w *watch) relate(err error, key opbus.Key) {
	if !errors.Is(err, opbus.ErrNotOwned) {
		w.observe(err, key)
	}
}

// claimed reports whether obj carries what the adapter writes before the
// bus sees an object.
func (w *watch) claimed(r *resource, obj map[string]any) bool {
	if !w.s.names.hasRecord(obj) || r.finalizer != w.s.names.hasFinalizer(obj) {
		return false
	}
	if r.mode == StatusConditions && !r.pruned.Load() {
		if _, ok := conditions(obj); !ok {
			return false
		}
	}
	return true
}

func (w *watch) markDeleting(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.deleting[id] {
		return false
	}
	w.deleting[id] = true
	return true
}

func (w *watch) isDeleting(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deleting[id]
}

func (w *watch) unmarkDeleting(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	was := w.deleting[id]
	delete(w.deleting, id)
	return was
}
