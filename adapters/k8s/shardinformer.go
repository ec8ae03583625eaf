package k8s

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	kwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// shardSelection is the shard selector that the informers of a sharded
// resource list and watch with, when the API server applies shard
// selectors: the ranges the replica owns. A change of it ends their
// watches as expired, so that they list again with it: the objects of
// buckets taken on arrive as added, those of buckets given up leave as
// deleted (which the watch drops, as not owned).
type shardSelection struct {
	selector atomic.Pointer[string] // "" (or nil): every object

	mu      sync.Mutex
	watches map[*expiringWatch]bool
}

// set changes the selector and ends the open watches if it changed.
func (sel *shardSelection) set(selector string) {
	if old := sel.selector.Swap(&selector); old != nil && *old == selector || old == nil && selector == "" {
		return
	}
	sel.mu.Lock()
	ws := sel.watches
	sel.watches = nil
	sel.mu.Unlock()
	for w := range ws {
		w.expire()
	}
}

// current returns the selector in force: "" for every object.
func (sel *shardSelection) current() string {
	if p := sel.selector.Load(); p != nil {
		return *p
	}
	return ""
}

// buildShardedInformers creates r's informers as buildInformers does, but
// listing and watching with sel's shard selector.
func (r *resource) buildShardedInformers(dyn dynamic.Interface, sel *shardSelection) {
	for _, ns := range r.namespaces() {
		api := dyn.Resource(r.gvr).Namespace(ns)
		// listed is the selector of the informer's last list: a watch
		// that would go on from a list made with another selector (set
		// ran between the two) ends at once, so that the informer lists
		// again, or it would miss the objects just taken on until they
		// change.
		var listed atomic.Pointer[string]
		lw := &cache.ListWatch{
			ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
				o.LabelSelector, o.FieldSelector = r.cfg.LabelSelector, r.cfg.FieldSelector
				o.ShardSelector = sel.current()
				listed.Store(&o.ShardSelector)
				return api.List(ctx, o)
			},
			WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (kwatch.Interface, error) {
				o.LabelSelector, o.FieldSelector = r.cfg.LabelSelector, r.cfg.FieldSelector
				o.ShardSelector = sel.current()
				if o.SendInitialEvents != nil && *o.SendInitialEvents {
					listed.Store(&o.ShardSelector) // a watch that lists as it starts
				}
				w, err := api.Watch(ctx, o)
				if err != nil {
					return nil, err
				}
				ew := newExpiringWatch(w)
				sel.mu.Lock()
				if sel.watches == nil {
					sel.watches = map[*expiringWatch]bool{}
				}
				sel.watches[ew] = true
				sel.mu.Unlock()
				// Registered first, then checked: a set from now on
				// expires ew; one made since the selector was read, or
				// since the list, is seen here.
				if l := listed.Load(); sel.current() != o.ShardSelector || l != nil && *l != o.ShardSelector {
					ew.expire()
				}
				return ew, nil
			},
		}
		inf := cache.NewSharedIndexInformerWithOptions(lw, &unstructured.Unstructured{},
			cache.SharedIndexInformerOptions{Indexers: cache.Indexers{}, ObjectDescription: r.gvr.String()})
		_ = inf.SetTransform(dropManagedFields)
		r.informers[ns] = inf
	}
}

// expiringWatch passes on the events of a watch until expire is called,
// then ends with an Expired error, on which the informer's reflector lists
// again.
type expiringWatch struct {
	inner kwatch.Interface
	out   chan kwatch.Event
	done  chan struct{}
	once  sync.Once
	exp   chan struct{}
	eonce sync.Once
}

func newExpiringWatch(inner kwatch.Interface) *expiringWatch {
	w := &expiringWatch{inner: inner, out: make(chan kwatch.Event), done: make(chan struct{}), exp: make(chan struct{})}
	go w.run()
	return w
}

func (w *expiringWatch) run() {
	defer close(w.out)
	defer w.inner.Stop()
	in := w.inner.ResultChan()
	for {
		select {
		case ev, ok := <-in:
			if !ok {
				return
			}
			select {
			case w.out <- ev:
			case <-w.done:
				return
			case <-w.exp:
				w.sendExpired()
				return
			}
		case <-w.done:
			return
		case <-w.exp:
			w.sendExpired()
			return
		}
	}
}

func (w *expiringWatch) sendExpired() {
	st := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired,
		Message: "k8s: the shard selector changed: list again"}
	select {
	case w.out <- kwatch.Event{Type: kwatch.Error, Object: st}:
	case <-w.done:
	}
}

func (w *expiringWatch) expire() { w.eonce.Do(func() { close(w.exp) }) }

// Stop ends the watch, as the reflector does.
func (w *expiringWatch) Stop() { w.once.Do(func() { close(w.done) }) }

// ResultChan returns the events.
func (w *expiringWatch) ResultChan() <-chan kwatch.Event { return w.out }
