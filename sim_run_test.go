package opbus

// The harness of TestSimulation, continued: restarts, documents the bus
// must refuse, and the run of a sequence.

import (
	"context"
	"os"
	"testing/synctest"
	"time"
)

// bad observes a document the bus must refuse (rule 20): it returns an
// error, and nothing is queued or handled (a handler that runs on it finds
// a uid never observed, or no state).
func (s *simRun) bad(o simOp) {
	name := s.cfg.name(o.key)
	var doc map[string]any
	what := "nil document"
	if o.n%2 == 1 {
		doc = baseDoc(name, 0)
		doc["spec"].(map[string]any)["self"] = doc
		what = "document containing itself"
	}
	s.mu.Lock()
	b := s.bus
	s.mu.Unlock()
	var err error
	s.keyLock[o.key] <- struct{}{}
	if o.dispatch {
		err = b.Dispatch(context.WithValue(context.Background(), dispatchMark{}, true), s.cfg.key(o.key), doc)
	} else {
		err = b.Observe(context.Background(), s.cfg.key(o.key), doc)
	}
	<-s.keyLock[o.key]
	if err == nil {
		s.mu.Lock()
		s.violate("door", "%s: the bus accepted a %s", name, what)
		s.mu.Unlock()
	}
}

// restart stops Run and starts a new bus on the same store.
func (s *simRun) restart(o simOp) {
	if o.block && !simSkip["block"] && s.docs[o.key] != nil {
		s.mu.Lock()
		s.armed = true
		// A handler of a pass that began before this update may be still
		// running; blocking it could end before the shutdown, which would
		// then not abandon it.
		s.armedSeq = s.obsSeq + 1
		s.mu.Unlock()
		s.observe(simOp{kind: opUpdate, key: o.key, field: "replicas", n: s.rv + 1})
		synctest.Wait()
	}
	if o.burst {
		// Queued behind the blocked handler: pending at shutdown.
		for _, b := range burst(o.key, o.n, false) {
			s.observe(b)
		}
	}
	s.store.setQuiet(true) // CHOICE: no faults while pending work is saved; see the report
	s.cancel()
	start := time.Now()
	defer func() { simBeside.Add(s.bus.Stats().Beside) }()
	select {
	case err := <-s.runDone:
		if err != nil {
			s.mu.Lock()
			s.violate("shutdown", "Run returned %v", err)
			s.mu.Unlock()
		}
	case <-time.After(time.Hour):
		s.mu.Lock()
		s.violate("shutdown", "Run did not return within an hour of its context ending")
		s.broken = true
		s.mu.Unlock()
		return
	}
	s.mu.Lock()
	if took := time.Since(start); took > simShutdownTimeout+time.Second+100*time.Millisecond {
		s.violate("shutdown", "Run returned %v after its context ended; ShutdownTimeout is %v (+1s)", took, simShutdownTimeout)
	}
	s.returned[s.gen] = true
	s.armed = false
	for k := range s.cfg.keys {
		s.excuse[s.cfg.name(k)]++
	}
	s.mu.Unlock()
	s.inflight.Wait()

	s.mu.Lock()
	s.gen++
	relist := o.relist || s.cfg.relists(s.gen)
	s.mu.Unlock()
	if err := s.startBus(); err != nil {
		s.mu.Lock()
		s.violate("setup", "%v", err)
		s.broken = true
		s.mu.Unlock()
		return
	}
	s.store.setQuiet(false)
	s.mu.Lock()
	b, gen := s.bus, s.gen
	type item struct {
		k   int
		doc map[string]any
		del bool
	}
	var again []item
	for k := range s.cfg.keys {
		l, lost := s.lost[k]
		if lost && l.del && s.docs[k] == nil {
			// Never reached the bus: the caller tells the next one.
			again = append(again, item{k: k, doc: l.doc, del: true})
		}
		if doc := s.docs[k]; doc != nil && (relist || lost) {
			s.m.observe(s.cfg.name(k), doc, s.epoch[k], gen)
			again = append(again, item{k: k, doc: doc})
		}
	}
	s.lost = map[int]lostRec{}
	s.mu.Unlock()
	for _, it := range again {
		observe := b.Observe
		if it.del {
			observe = b.ObserveDelete
		}
		if err := observe(context.Background(), s.cfg.key(it.k), it.doc); err != nil {
			s.mu.Lock()
			s.violate("observe", "%s: Observe: %v", s.cfg.name(it.k), err)
			s.mu.Unlock()
		}
	}
}

// run performs the operations and checks the bus against the model.
func (s *simRun) run(ops []simOp) {
	var err error
	var inner interface {
		Store
		Lister
	} = NewMemoryStore()
	if s.cfg.fileStore {
		if inner, err = NewFileStore(s.dir); err != nil {
			s.violate("setup", "%v", err)
			return
		}
	}
	s.store = &faultStore{inner: inner, slow: s.cfg.pipeline, onFault: func(name string) {
		s.mu.Lock()
		s.excuse[name]++
		s.mu.Unlock()
	}}
	if err := s.startBus(); err != nil {
		s.violate("setup", "%v", err)
		return
	}
	for _, o := range ops {
		if s.isBroken() {
			break
		}
		switch o.kind {
		case opCreate, opUpdate, opDelete:
			s.observe(o)
		case opBurst:
			for _, b := range burst(o.key, o.n, o.dispatch) {
				s.observe(b)
			}
		case opBad:
			s.bad(o)
		case opRestart:
			s.restart(o)
		case opFault:
			if simSkip[o.field] {
				continue // OPBUS_SIM_SKIP=corrupt (or load, save, delete)
			}
			s.store.arm(s.cfg.name(o.key), o.field, int(o.n))
		case opSettle:
			synctest.Wait()
		case opSleep:
			time.Sleep(time.Duration(o.n) * time.Millisecond)
		}
	}
	if !s.isBroken() {
		// Quiescence: every retry due has run (handlers fail a bounded
		// number of times per value, backoff is capped at 200ms).
		synctest.Wait()
		s.tm.quiet = time.Now()
		for range 10 {
			time.Sleep(time.Second)
			synctest.Wait()
		}
		s.inflight.Wait()
		synctest.Wait()
		s.store.setQuiet(true)
		s.check()
	}
	s.store.setQuiet(true)
	s.cancel()
	defer func() { simBeside.Add(s.bus.Stats().Beside) }()
	select {
	case <-s.runDone:
	case <-time.After(time.Hour):
	}
	s.inflight.Wait()
	time.Sleep(simShutdownTimeout + 10*time.Second) // let abandoned handlers end
	if s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

func (s *simRun) isBroken() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.broken
}
