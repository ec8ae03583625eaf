package opbus

// The harness of TestSimulation: it builds real buses, wraps every handler
// to check the invariants at every call, and runs the operations.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing/synctest"
	"time"
)

const (
	simShutdownTimeout = 2 * time.Second
	simBackoffInitial  = 20 * time.Millisecond
	simBackoffMax      = 200 * time.Millisecond

	// simWhenPanicsUnderRun lets the gated handler's On.When panic in the
	// passes of Run's workers. On the engine of this branch such a panic
	// is not recovered and kills the test process, so until
	// the engine recovers it the filter panics only inside Dispatch, on
	// the harness's goroutine, where the harness catches what escapes.
	simWhenPanicsUnderRun = true
)

type dispatchMark struct{}

// simSkip names what OPBUS_SIM_SKIP leaves out, to look for one defect
// behind another: rule tags (backoff, shutdown, …) whose violations are
// dropped, the behaviours badlevel and block, and the store faults load,
// save, delete and corrupt.
var simSkip = func() map[string]bool {
	m := map[string]bool{}
	for _, s := range strings.Split(os.Getenv("OPBUS_SIM_SKIP"), ",") {
		if s != "" {
			m[s] = true
		}
	}
	return m
}()

type okRec struct {
	gen    int
	epoch  int
	view   string
	excuse int
}

type resRec struct {
	epoch int
	view  string
	ok    bool
}

// lostRec is a state a Dispatch could not hand over: the bus had closed.
type lostRec struct {
	del bool
	doc map[string]any
}

type failRec struct {
	gen, epoch int
	view       string
	at         time.Time
	min        time.Duration
	changes    int // viewChanges at the failure
	dispatches int
	seq        int // the observation the failed call handled
}

// viewAt is a handler's view of one observed state, by observation number.
type viewAt struct {
	seq  int
	view string
}

// seqOf returns the observation number the harness stamped on doc.
func seqOf(doc map[string]any) int {
	md, _ := doc["metadata"].(map[string]any)
	rv, _ := md["resourceVersion"].(string)
	n, _ := strconv.Atoi(rv)
	return n
}

// changedBetween reports whether an observed state after observation from,
// up to observation to, gave handler hk another view than v: the bus may
// have handled it (the value returned to the one last handled, or moved
// on), so v is a new value again.
func (s *simRun) changedBetween(hk string, from, to int, v string) bool {
	for _, e := range s.viewLog[hk] {
		if e.seq > from && e.seq <= to && e.view != v {
			return true
		}
	}
	return false
}

// simRun is one run of one sequence.
type simRun struct {
	cfg   simConfig
	dir   string
	store *faultStore
	m     *model

	mu         sync.Mutex
	gen        int
	bus        *Bus
	cancel     context.CancelFunc
	runDone    chan error
	returned   map[int]bool // generations whose Run has returned
	violations []string
	broken     bool // the bus cannot go on: stop the sequence

	docs        []map[string]any // the latest observed state per key; nil: gone
	epoch       []int
	nextEpoch   int
	rv          int64
	uidEpoch    map[string]int // name/uid → incarnation
	maxEpoch    map[string]int
	deleting    map[string]bool   // name/epoch: a delete handler was called
	running     map[string]int    // gen/name → handlers running
	excuse      map[string]int    // name → restarts, store faults, abandoned handlers
	lastOK      map[string]okRec  // name/handler → its last success
	lastRes     map[string]resRec // name/handler → its last result
	deleteDone  map[string]bool   // name/epoch/handler: succeeded or failed permanently
	created     map[string]string // name/epoch → the value the create handler succeeded on
	resumeFail  map[string]int    // gen/name → the incarnation whose resume handler's last result failed; 0 for none
	fails       map[string]failRec
	viewChanges map[string]int  // name/handler
	dispatches  map[string]int  // name → observations made with Dispatch
	lost        map[int]lostRec // key → a Dispatch refused with ErrClosed
	armed       bool
	armedSeq    int             // the observation the armed block waits for: earlier passes may end before shutdown
	chain       []chan struct{} // per key: closed when the last harness Dispatch returns
	keyOps      []int           // per key: operations made, so a retried Dispatch stops once a newer state exists
	obsSeq      int             // observations stamped into metadata.resourceVersion
	viewLog     map[string][]viewAt
	forgotten   map[string]int  // name → the incarnation a bus without handler verdict committed
	keyLock     []chan struct{} // per key: a caller's calls for one key do not overlap (a retry, then a newer state); a channel, so that waiting on it lets fake time move
	inflight    sync.WaitGroup
	tm          simTimers // sim_timer_test.go
}

func newSimRun(cfg simConfig, dir string) *simRun {
	s := &simRun{
		cfg: cfg, dir: dir, m: newModel(cfg),
		returned: map[int]bool{}, docs: make([]map[string]any, cfg.keys), epoch: make([]int, cfg.keys),
		uidEpoch: map[string]int{}, maxEpoch: map[string]int{}, deleting: map[string]bool{},
		running: map[string]int{}, excuse: map[string]int{}, lastOK: map[string]okRec{},
		lastRes: map[string]resRec{}, deleteDone: map[string]bool{}, created: map[string]string{},
		resumeFail: map[string]int{}, fails: map[string]failRec{}, viewChanges: map[string]int{},
		dispatches: map[string]int{}, lost: map[int]lostRec{}, viewLog: map[string][]viewAt{},
		forgotten: map[string]int{},
	}
	s.chain = make([]chan struct{}, cfg.keys)
	s.keyOps = make([]int, cfg.keys)
	s.keyLock = make([]chan struct{}, cfg.keys)
	for i := range s.keyLock {
		s.keyLock[i] = make(chan struct{}, 1)
	}
	return s
}

// uidOf is the Incarnation function of the tests: metadata.uid.
func uidOf(doc map[string]any) string {
	md, _ := doc["metadata"].(map[string]any)
	uid, _ := md["uid"].(string)
	return uid
}

// violate records a broken rule; tag names the rule for shrinking.
func (s *simRun) violate(tag, format string, args ...any) {
	if simSkip[tag] {
		return
	}
	msg := fmt.Sprintf("[%s] t=%v gen=%d: %s", tag, time.Now().UTC().Format("15:04:05.000"), s.gen, fmt.Sprintf(format, args...))
	if len(s.violations) < 20 {
		s.violations = append(s.violations, msg)
	}
}

// startBus builds the bus of the current generation and starts its Run.
func (s *simRun) startBus() error {
	cfg := s.cfg
	opts := &Options{
		Store: s.store, Workers: cfg.workers, Writers: cfg.writers, MaxBacklog: cfg.maxBacklog, ShutdownTimeout: simShutdownTimeout,
		Backoff:  Backoff{Initial: simBackoffInitial, Max: simBackoffMax, Factor: 2},
		Ignore:   simIgnore,
		Observer: simObserver{s},
	}
	if cfg.listKeys {
		opts.ListKeys = simListKeys
	}
	if cfg.incarnation {
		opts.Incarnation = uidOf
	}
	if os.Getenv("OPBUS_SIM_LOG") != "" { // the bus's debug log, to study one seed
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	b, err := New(opts)
	if err != nil {
		return err
	}
	b.lanes.pipeAlways = cfg.pipeline
	gen := s.gen
	for _, h := range simHandlers(cfg, gen) {
		on := On{Types: h.types, Fields: h.fields, Revision: h.revision, Every: h.every, Writes: h.writes}
		if h.gated {
			on.When = s.when
		}
		if err := b.Handle(h.id, s.handler(gen, h), on); err != nil {
			return err
		}
	}
	if err := b.Collect("coll", func(ctx context.Context, key Key, obj map[string]any) Status {
		return s.collect(gen, key, obj)
	}); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	s.mu.Lock()
	s.bus, s.cancel, s.runDone = b, cancel, done
	s.mu.Unlock()
	return nil
}

// when is the gated handler's On.When.
func (s *simRun) when(ev *Event) bool {
	ok, panics := whenVerdict(ev.New)
	if panics && (simWhenPanicsUnderRun || strings.Contains(string(debug.Stack()), ".dispatchOnce(")) {
		panic(fmt.Sprintf("simulated When panic on replicas %d", replicasOf(ev.New)))
	}
	return ok
}

// collect is the collector of the bus of generation gen.
func (s *simRun) collect(gen int, key Key, obj map[string]any) Status {
	if obj == nil {
		return Status{}
	}
	if s.cfg.removed > 0 && gen == s.cfg.removed {
		// A pass of the bus without handler verdict: the object's commit
		// forgets it (rule 19), so it must run again when it returns.
		s.mu.Lock()
		s.forgotten[key.Name] = s.uidEpoch[key.Name+"/"+uidOf(obj)]
		s.mu.Unlock()
	}
	st, panics := collectStatus(obj)
	if panics {
		panic("simulated collector panic")
	}
	return st
}

// handler wraps the simulated handler h of bus generation gen with the
// checks of every call.
func (s *simRun) handler(gen int, h simHandler) HandlerFunc {
	return func(ctx context.Context, ev *Event) (Status, error) {
		name := ev.Key.Name
		doc := ev.New
		if ev.Type == Delete {
			doc = ev.Old
		}
		fromDispatch := ctx.Value(dispatchMark{}) != nil
		s.mu.Lock()
		hk := name + "/" + h.id
		gk := fmt.Sprint(gen, "/", name)
		s.running[gk]++
		if s.running[gk] > 1 {
			s.violate("overlap", "%s: handler %s (%v) runs while another handler of the key runs: two passes at once", name, h.id, ev.Type)
		}
		if doc == nil {
			s.violate("no-state", "%s: handler %s got a %v event without a state", name, h.id, ev.Type)
			s.running[gk]--
			s.mu.Unlock()
			return Status{}, nil
		}
		uid := uidOf(doc)
		epoch, known := s.uidEpoch[name+"/"+uid]
		ek := fmt.Sprint(name, "/", epoch)
		switch {
		case !known:
			s.violate("never-observed", "%s: handler %s called with uid %q, never observed", name, h.id, uid)
		case epoch < s.maxEpoch[name]:
			s.violate("stale-incarnation", "%s: handler %s (%v) of bus %d called for incarnation %d (uid %s) after incarnation %d began", name, h.id, ev.Type, gen, epoch, uid, s.maxEpoch[name])
		case ev.Type != Delete && s.deleting[ek]:
			s.violate("stale-incarnation", "%s: handler %s (%v) called for incarnation %d after its deletion began", name, h.id, ev.Type, epoch)
		}
		s.maxEpoch[name] = max(s.maxEpoch[name], epoch)
		v := deletedView
		if ev.Type == Delete {
			s.deleting[ek] = true
		} else {
			v = view(h, doc, s.cfg.listKeys)
			if known && !s.m.observedValue(name, epoch, h.id, v) {
				s.violate("never-observed", "%s: handler %s (%v) called on a value never observed in incarnation %d: %s", name, h.id, ev.Type, epoch, v)
			}
		}
		now := time.Now()
		if f, ok := s.fails[hk]; ok && !fromDispatch && f.gen == gen && f.epoch == epoch && f.view == v &&
			f.changes == s.viewChanges[hk] && f.dispatches == s.dispatches[name] && now.Before(f.at.Add(f.min-time.Millisecond)) &&
			!s.changedBetween(hk, f.seq, seqOf(doc), v) {
			s.violate("backoff", "%s: handler %s ran again %v after failing on an unchanged value, before its retry was due (%v)", name, h.id, now.Sub(f.at), f.min)
		}
		block := s.armed && !fromDispatch && gen == s.gen && seqOf(doc) >= s.armedSeq
		if block {
			s.armed = false
			s.tm.abandon(ev.ID) // shutdown abandons this pass
		}
		s.mu.Unlock()

		bv := v
		if ev.Type == Delete {
			bv = "deleted " + uid
		}
		be := behaviourOf(h.id, name, bv)
		time.Sleep(time.Duration(mix("took", h.id, bv)%3+1) * time.Millisecond)
		if block {
			time.Sleep(simShutdownTimeout + 5*time.Second) // ignores ctx
		}
		var st Status
		var err error
		panicking := false
		fail := ev.Attempt <= be.failures && !ev.Due // sim_timer_test.go: due runs do not fail for a while
		switch {
		case be.kind == bePermanent:
			err = Permanent(errSim)
		case be.kind == beBadLevel:
			st = Status{Level: 42, Message: "no such level"}
		case fail && be.kind == beFail:
			err = errSim
		case fail && be.kind == bePanic:
			panicking = true
		case fail && be.kind == beRetryAfter:
			err = RetryAfter(be.delay, errSim)
		default:
			st = successStatus(h.id, name, v)
		}
		s.timerCall(gen, h, ev, name, epoch, v, err == nil && !panicking && be.kind != beBadLevel, now)
		s.record(gen, h, ev, name, epoch, v, be, err == nil && !panicking && be.kind != beBadLevel, fromDispatch)
		if panicking {
			panic("simulated handler panic")
		}
		return st, err
	}
}

// record notes the result of a call and checks that it is not a second
// success on the same value.
func (s *simRun) record(gen int, h simHandler, ev *Event, name string, epoch int, v string, be behaviour, ok, fromDispatch bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	hk := name + "/" + h.id
	s.running[fmt.Sprint(gen, "/", name)]--
	if s.returned[gen] {
		// Abandoned at shutdown: not committed; the next bus may run the
		// handler on this value once more.
		s.excuse[name]++
		return
	}
	if h.id == "resume" {
		if ok {
			delete(s.resumeFail, fmt.Sprint(gen, "/", name))
		} else {
			s.resumeFail[fmt.Sprint(gen, "/", name)] = epoch
		}
	}
	if !ok {
		s.lastRes[hk] = resRec{epoch: epoch, view: v}
		if ev.Type == Delete && be.kind == bePermanent {
			s.deleteDone[fmt.Sprint(name, "/", epoch, "/", h.id)] = true
		}
		if !fromDispatch {
			f := failRec{gen: gen, epoch: epoch, view: v, at: time.Now(), changes: s.viewChanges[hk], dispatches: s.dispatches[name], seq: seqOf(ev.Object())}
			switch be.kind {
			case beRetryAfter:
				f.min = be.delay
			case bePermanent:
				f.min = 1000 * time.Hour
			default:
				d := simBackoffInitial
				for i := 1; i < ev.Attempt && d < simBackoffMax; i++ {
					d *= 2
				}
				f.min = min(d, simBackoffMax) * 8 / 10
			}
			s.fails[hk] = f
		}
		return
	}
	delete(s.fails, hk)
	if last, seen := s.lastOK[hk]; seen && ev.Type != Resume && !ev.Due && last.epoch == epoch && last.view == v && last.excuse == s.excuse[name] {
		if ev.Type == Delete {
			s.violate("delete-twice", "%s: delete handler %s succeeded twice for incarnation %d", name, h.id, epoch)
		} else {
			s.violate("double-success", "%s: handler %s (%v) succeeded twice in a row on the same value in incarnation %d", name, h.id, ev.Type, epoch)
		}
	}
	s.lastOK[hk] = okRec{gen: gen, epoch: epoch, view: v, excuse: s.excuse[name]}
	s.lastRes[hk] = resRec{epoch: epoch, view: v, ok: true}
	if ev.Type == Delete {
		s.deleteDone[fmt.Sprint(name, "/", epoch, "/", h.id)] = true
	}
	if h.id == "create" {
		if _, done := s.created[fmt.Sprint(name, "/", epoch)]; !done {
			s.created[fmt.Sprint(name, "/", epoch)] = v
		}
	}
}

// observe performs an observation operation.
func (s *simRun) observe(o simOp) {
	name := s.cfg.name(o.key)
	s.mu.Lock()
	cur := s.docs[o.key]
	var doc map[string]any
	deleted := false
	switch o.kind {
	case opCreate:
		doc = baseDoc(s.cfg.name(o.key), o.n)
		if cur == nil || s.cfg.incarnation {
			s.nextEpoch++
			s.epoch[o.key] = s.nextEpoch
		}
	case opUpdate:
		if cur == nil {
			s.mu.Unlock()
			return // nothing to update: a shrunk sequence dropped the create
		}
		s.rv++
		doc = mutate(cur, o, s.rv)
	case opDelete:
		if cur == nil {
			s.mu.Unlock()
			return
		}
		doc, deleted = cur, true
	}
	if deleted {
		s.m.observeDelete(name)
		s.docs[o.key] = nil
	} else {
		s.obsSeq++
		doc["metadata"].(map[string]any)["resourceVersion"] = strconv.Itoa(s.obsSeq) // ignored by the bus
		s.uidEpoch[name+"/"+uidOf(doc)] = s.epoch[o.key]
		for _, h := range simHandlers(s.cfg, s.gen) {
			hk := name + "/" + h.id
			nv := view(h, doc, s.cfg.listKeys)
			if cur == nil || view(h, cur, s.cfg.listKeys) != nv {
				s.viewChanges[hk]++
			}
			s.viewLog[hk] = append(s.viewLog[hk], viewAt{s.obsSeq, nv})
		}
		s.docs[o.key] = doc
		s.m.observe(name, doc, s.epoch[o.key], s.gen)
	}
	if o.dispatch {
		s.dispatches[name]++
	}
	s.keyOps[o.key]++
	if s.keyOps[o.key]%3 == 0 && doc != nil {
		doc = typedDoc(doc) // the same document, as a caller may build it (rule 20)
	}
	b := s.bus
	s.mu.Unlock()
	if o.dispatch {
		s.dispatch(b, o.key, doc, deleted)
		return
	}
	var err error
	s.keyLock[o.key] <- struct{}{}
	if deleted {
		err = b.ObserveDelete(context.Background(), s.cfg.key(o.key), doc)
	} else {
		err = b.Observe(context.Background(), s.cfg.key(o.key), doc)
	}
	<-s.keyLock[o.key]
	if err != nil {
		s.mu.Lock()
		s.violate("observe", "%s: Observe: %v", name, err)
		s.mu.Unlock()
	}
}

// dispatch calls Dispatch on a goroutine of its own, as a caller that
// retries until it succeeds (a Juju hook that fails is run again), and
// returns once the call is under way: done, or blocked inside the bus (on
// the busy key, or in a handler). The harness's calls for one key are made
// one after the other, in the order of the operations.
func (s *simRun) dispatch(b *Bus, k int, doc map[string]any, deleted bool) {
	if prev := s.chain[k]; prev != nil {
		<-prev
	}
	done := make(chan struct{})
	s.chain[k] = done
	s.mu.Lock()
	start := s.keyOps[k]
	s.mu.Unlock()
	s.inflight.Add(1)
	defer synctest.Wait()
	go func() {
		defer s.inflight.Done()
		defer close(done)
		for i := range 8 {
			if s.isBroken() {
				return // a panic escaped: the key may be busy for ever
			}
			s.keyLock[k] <- struct{}{}
			s.mu.Lock()
			stale := i > 0 && s.keyOps[k] != start
			s.mu.Unlock()
			if stale {
				<-s.keyLock[k]
				return
			}
			escaped, err := s.dispatchOnce(b, k, doc, deleted)
			<-s.keyLock[k]
			s.mu.Lock()
			if escaped != nil {
				s.violate("when-panic", "%s: a panic escaped Dispatch: %v", s.cfg.name(k), escaped)
				s.broken = true
			}
			if errors.Is(err, ErrClosed) && (i == 0 || !deleted) {
				s.lost[k] = lostRec{del: deleted, doc: doc}
				if i == 0 && !deleted {
					s.m.refused(s.cfg.name(k), s.uidEpoch[s.cfg.name(k)+"/"+uidOf(doc)])
				}
			}
			newer := s.keyOps[k] != start
			s.mu.Unlock()
			if escaped != nil || err == nil || errors.Is(err, ErrClosed) || newer {
				// A caller retries the state it has, not one that a newer
				// observation has replaced (a Juju hook re-reads the model).
				return
			}
		}
	}()
}

func (s *simRun) dispatchOnce(b *Bus, k int, doc map[string]any, deleted bool) (escaped any, err error) {
	defer func() { escaped = recover() }()
	ctx := context.WithValue(context.Background(), dispatchMark{}, true)
	if deleted {
		return nil, b.DispatchDelete(ctx, s.cfg.key(k), doc)
	}
	return nil, b.Dispatch(ctx, s.cfg.key(k), doc)
}
