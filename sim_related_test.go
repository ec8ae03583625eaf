package opbus

// TestSimulationRelated is the simulation of related objects: seeded random
// operations on WebApps and the Deployments that relate to them (creates,
// updates, a Deployment changing which WebApps it relates to — none, one
// or two —, deletions and re-creations of either), made with Observe and
// Dispatch while Run runs, inside testing/synctest, against a sequential
// reference model of the rules of docs/semantics.md on related objects.
//
//	go test -run '^TestSimulationRelated$' .
//	OPBUS_SIM_SEED=123 go test -run '^TestSimulationRelated$' -v .
//	OPBUS_SIM_DURATION=10m go test -run '^TestSimulationRelated$' -timeout 0 .
//
// Checked at every handler call: the value a handler runs on is one the
// model observed for that incarnation of the WebApp (the WebApp's state and
// its related Deployments, each in an order consistent with the
// observations), and a handler never succeeds twice in a row on one value.
// Checked at quiescence: each live WebApp's handlers last succeeded on its
// final value, and its slots show those successes. Restarts are left out:
// a new bus knows related objects only once they are observed again
// (Bus.Relate), which the model does not follow.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

type relOpKind int

const (
	relParent       relOpKind = iota // observe WebApp p: created (new uid) if gone, else spec.n = n
	relParentDelete                  // observe the deletion of WebApp p
	relChild                         // observe Deployment c: status.ready = n, relating to the WebApps in to
	relChildDelete                   // observe the deletion of Deployment c
	relSettle                        // synctest.Wait
	relSleep                         // advance fake time by n ms
)

type relOp struct {
	kind     relOpKind
	key      int
	n        int64
	to       []int
	dispatch bool
}

func (o relOp) String() string {
	via := "observe"
	if o.dispatch {
		via = "dispatch"
	}
	switch o.kind {
	case relParent:
		return fmt.Sprintf("%s p%d n=%d", via, o.key, o.n)
	case relParentDelete:
		return fmt.Sprintf("%s p%d delete", via, o.key)
	case relChild:
		return fmt.Sprintf("%s c%d ready=%d to=%v", via, o.key, o.n, o.to)
	case relChildDelete:
		return fmt.Sprintf("%s c%d delete", via, o.key)
	case relSettle:
		return "settle"
	}
	return fmt.Sprintf("sleep %dms", o.n)
}

type relConfig struct {
	parents, children, workers, maxBacklog int
	fileStore                              bool
}

func genRelated(seed uint64) (relConfig, []relOp) {
	r := rand.New(rand.NewPCG(seed, seed^0x51ed27))
	cfg := relConfig{parents: 2 + r.IntN(2), children: 2 + r.IntN(3), workers: 1 + r.IntN(4), fileStore: r.IntN(4) == 0}
	if r.IntN(2) == 0 {
		cfg.maxBacklog = 2 + r.IntN(2)
	}
	var ops []relOp
	for range 60 {
		o := relOp{dispatch: r.IntN(6) == 0}
		switch w := r.IntN(100); {
		case w < 20:
			o.kind, o.key, o.n = relParent, r.IntN(cfg.parents), r.Int64N(4)
		case w < 27:
			o.kind, o.key = relParentDelete, r.IntN(cfg.parents)
		case w < 70:
			o.kind, o.key, o.n = relChild, r.IntN(cfg.children), r.Int64N(3)
			for p := range cfg.parents {
				if r.IntN(3) == 0 {
					o.to = append(o.to, p)
				}
			}
		case w < 78:
			o.kind, o.key = relChildDelete, r.IntN(cfg.children)
		case w < 90:
			o.kind = relSettle
		default:
			o.kind, o.n = relSleep, []int64{1, 10, 50, 300}[r.IntN(4)]
		}
		ops = append(ops, o)
	}
	return cfg, ops
}

// The handlers of the simulation, on WebApps.
var relSimHandlers = []struct{ id, field string }{
	{"kids", "related.Deployment[*].status.ready"},
	{"pair", "related.Deployment.c0.status.ready"}, // with spec.n, below
}

// relModel is the sequential reference: the latest state of every object,
// and per WebApp incarnation and handler every value observed.
type relModel struct {
	parents  map[int]map[string]any // live WebApps
	epoch    map[int]int
	children map[int]map[string]any // live Deployments
	values   map[string]bool        // "p/epoch/handler/value"
}

// relValue is handler id's value on a WebApp document with its view, as
// the harness reads it from an event and the model builds it.
func relValue(id string, doc map[string]any) string {
	rel, _ := doc[RelatedField].(map[string]any)
	deps, _ := rel["Deployment"].(map[string]any)
	ready := func(name string) string {
		d, ok := deps[name].(map[string]any)
		if !ok {
			return "none"
		}
		st, _ := d["status"].(map[string]any)
		return fmt.Sprint(st["ready"])
	}
	if id == "pair" {
		spec, _ := doc["spec"].(map[string]any)
		return fmt.Sprintf("n=%v c0=%s", spec["n"], ready("c0"))
	}
	var parts []string
	for _, name := range slices.Sorted(maps.Keys(deps)) {
		parts = append(parts, name+"="+ready(name))
	}
	return strings.Join(parts, ",")
}

// seen is what the model says a live WebApp p's handlers see now.
func (m *relModel) seen(p int) map[string]any {
	doc := maps.Clone(m.parents[p])
	deps := map[string]any{}
	for c, d := range m.children {
		if slices.Contains(d["spec"].(map[string]any)["to"].([]any), any(int64(p))) {
			deps[fmt.Sprint("c", c)] = d
		}
	}
	doc[RelatedField] = map[string]any{"Deployment": deps}
	return doc
}

// note records the values every live WebApp sees after an operation.
func (m *relModel) note() {
	for p := range m.parents {
		doc := m.seen(p)
		for _, h := range relSimHandlers {
			m.values[fmt.Sprint(p, "/", m.epoch[p], "/", h.id, "/", relValue(h.id, doc))] = true
		}
	}
}

// relRun is one sequence's harness.
type relRun struct {
	cfg  relConfig
	m    *relModel
	bus  *Bus
	uid  int
	mu   sync.Mutex
	last map[string]string // "p/handler" → "epoch/value" of its last success
	errs []string
}

func (s *relRun) violate(format string, args ...any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.errs = append(s.errs, fmt.Sprintf(format, args...))
}

// behaves says whether handler id fails on its attempt-th try of value v of
// p: some values fail once or twice before they succeed.
func relFails(id, p, v string, attempt int) bool {
	return int(mix("relfail", id, p, v)%5) >= attempt+2
}

func (s *relRun) handler(id string) HandlerFunc {
	return func(ctx context.Context, ev *Event) (Status, error) {
		p, _ := strconv.Atoi(strings.TrimPrefix(ev.Key.Name, "p"))
		epoch := int(ev.New["metadata"].(map[string]any)["uid"].(int64))
		v := relValue(id, ev.New)
		s.mu.Lock()
		known := s.m.values[fmt.Sprint(p, "/", epoch, "/", id, "/", v)]
		last, had := s.last[fmt.Sprint(p, "/", id)]
		s.mu.Unlock()
		if !known {
			s.violate("%s: handler %s ran on %q, a value never observed in incarnation %d", ev.Key.Name, id, v, epoch)
		}
		if had && last == fmt.Sprint(epoch, "/", v) {
			s.violate("%s: handler %s ran again on %q, which it had handled", ev.Key.Name, id, v)
		}
		if relFails(id, ev.Key.Name, v, ev.Attempt) {
			return Status{}, errors.New("simulated failure")
		}
		s.mu.Lock()
		s.last[fmt.Sprint(p, "/", id)] = fmt.Sprint(epoch, "/", v)
		s.mu.Unlock()
		return Active(id + " " + v), nil
	}
}

func relKey(kind string, i int) Key {
	if kind == "WebApp" {
		return Key{Kind: kind, Namespace: "sim", Name: fmt.Sprint("p", i)}
	}
	return Key{Kind: kind, Namespace: "sim", Name: fmt.Sprint("c", i)}
}

func (s *relRun) apply(o relOp) {
	ctx := context.Background()
	var key Key
	var doc map[string]any
	deleted := false
	s.mu.Lock()
	switch o.kind {
	case relParent:
		key = relKey("WebApp", o.key)
		old := s.m.parents[o.key]
		if old == nil {
			s.uid++
			s.m.epoch[o.key] = s.uid
			doc = map[string]any{"metadata": map[string]any{"uid": int64(s.uid)}, "spec": map[string]any{"n": o.n}}
		} else {
			doc = map[string]any{"metadata": old["metadata"], "spec": map[string]any{"n": o.n}}
		}
		s.m.parents[o.key] = doc
	case relParentDelete:
		key, deleted = relKey("WebApp", o.key), true
		doc = s.m.parents[o.key]
		delete(s.m.parents, o.key)
	case relChild:
		key = relKey("Deployment", o.key)
		to := []any{}
		for _, p := range o.to {
			to = append(to, int64(p))
		}
		doc = map[string]any{"spec": map[string]any{"to": to}, "status": map[string]any{"ready": o.n}}
		s.m.children[o.key] = doc
	case relChildDelete:
		key, deleted = relKey("Deployment", o.key), true
		doc = s.m.children[o.key]
		delete(s.m.children, o.key)
	}
	s.m.note()
	s.mu.Unlock()
	var err error
	switch {
	case deleted && o.dispatch:
		err = s.bus.DispatchDelete(ctx, key, doc)
	case deleted:
		err = s.bus.ObserveDelete(ctx, key, doc)
	case o.dispatch:
		err = s.bus.Dispatch(ctx, key, doc)
	default:
		err = s.bus.Observe(ctx, key, doc)
	}
	if err != nil && !strings.Contains(err.Error(), "simulated failure") {
		s.violate("%v: %v", o, err)
	}
}

// check compares the quiescent bus with the model.
func (s *relRun) check() {
	for p := range s.cfg.parents {
		key := relKey("WebApp", p)
		_, slots, err := s.bus.Status(context.Background(), key)
		if err != nil {
			s.violate("%s: Status: %v", key.Name, err)
			continue
		}
		if s.m.parents[p] == nil {
			if len(slots) > 0 {
				s.violate("%s is gone but shows slots %v", key.Name, slots)
			}
			continue
		}
		doc := s.m.seen(p)
		for _, h := range relSimHandlers {
			want := relValue(h.id, doc)
			if got := s.last[fmt.Sprint(p, "/", h.id)]; got != fmt.Sprint(s.m.epoch[p], "/", want) {
				s.violate("%s: handler %s last succeeded on %q, want the final value %d/%q", key.Name, h.id, got, s.m.epoch[p], want)
			}
			if got := slots[h.id]; got != Active(h.id+" "+want) {
				s.violate("%s: slot %s is %v, want %v", key.Name, h.id, got, Active(h.id+" "+want))
			}
		}
	}
}

func runRelated(t *testing.T, cfg relConfig, ops []relOp) []string {
	var errs []string
	stop := watchQueue()
	synctest.Test(t, func(t *testing.T) {
		var store Store = NewMemoryStore()
		if cfg.fileStore {
			fs, err := NewFileStore(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			store = fs
		}
		b, err := New(&Options{Store: store, Workers: cfg.workers, MaxBacklog: cfg.maxBacklog,
			Backoff: Backoff{Initial: 20 * time.Millisecond, Max: 200 * time.Millisecond, Factor: 2}})
		if err != nil {
			t.Fatal(err)
		}
		s := &relRun{cfg: cfg, bus: b, last: map[string]string{},
			m: &relModel{parents: map[int]map[string]any{}, epoch: map[int]int{}, children: map[int]map[string]any{}, values: map[string]bool{}}}
		must(t, b.Relate("Deployment", func(_ Key, obj map[string]any) []Key {
			var out []Key
			for _, p := range obj["spec"].(map[string]any)["to"].([]any) {
				out = append(out, relKey("WebApp", int(p.(int64))))
			}
			return out
		}))
		for _, h := range relSimHandlers {
			fields := []string{h.field}
			if h.id == "pair" {
				fields = append(fields, "spec.n")
			}
			must(t, b.Handle(h.id, s.handler(h.id), On{Kinds: []string{"WebApp"}, Fields: fields}))
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- b.Run(ctx) }()
		for _, o := range ops {
			switch o.kind {
			case relSettle:
				synctest.Wait()
			case relSleep:
				time.Sleep(time.Duration(o.n) * time.Millisecond)
			default:
				s.apply(o)
			}
		}
		for range 5 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		s.check()
		cancel()
		if err := <-done; err != nil {
			s.violate("Run: %v", err)
		}
		errs = s.errs
	})
	return append(errs, stop()...)
}

func TestSimulationRelated(t *testing.T) {
	seeds := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}
	for range 4 {
		seeds = append(seeds, rand.Uint64()%1_000_000)
	}
	seeds, deadline := simBounds(t, seeds)
	failed, start := 0, time.Now()
	i := 0
	defer func() { t.Logf("%d sequences of 60 operations in %v", i, time.Since(start).Round(time.Millisecond)) }()
	for ; i < len(seeds) || time.Now().Before(deadline); i++ {
		seed := rand.Uint64() % 1_000_000_000
		if i < len(seeds) {
			seed = seeds[i]
		}
		cfg, ops := genRelated(seed)
		errs := runRelated(t, cfg, ops)
		if len(errs) == 0 {
			continue
		}
		var b strings.Builder
		for i, o := range ops {
			fmt.Fprintf(&b, "  %2d. %v\n", i+1, o)
		}
		t.Errorf("seed %d (%+v):\n%s  → %s\nreplay: OPBUS_SIM_SEED=%d go test -run '^TestSimulationRelated$' -v .", seed, cfg, b.String(), strings.Join(errs, "\n  → "), seed)
		if failed++; failed >= 3 {
			break
		}
	}
}
