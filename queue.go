package opbus

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"
)

// observation is one observed state of a key, waiting to be dispatched.
type observation struct {
	old, new  map[string]any
	hasOld    bool // old is given by the source, not the bus's last state
	deleted   bool
	retry     bool // a scheduled retry of the current state
	coalesced bool // states before this one were skipped
}

// keyState is what the bus keeps per object. Fields below "owned by the
// dispatching goroutine" are touched only by the goroutine that has set
// busy; the rest are guarded by Bus.mu.
type keyState struct {
	key        Key
	queue      []observation
	queuedNow  bool // in Bus.ready
	busy       bool
	retryTimer *time.Timer
	retryDue   bool
	published  Slots             // the slots as of the last commit (nil: none), for Status
	values     map[string]string // the values as of the last commit, for Value

	// owned by the dispatching goroutine
	rec      *record
	cur      map[string]any // the latest dispatched state
	behind   map[int]map[string]any
	clean    uint64 // bit per handler (the first 64): its digest is that of cur
	deleting bool   // cur is the last state of a deleted object
	seen     bool   // a state was dispatched by this Bus
	sunk     bool   // the sink has the current slots
	saved    bool   // the store has the current record
	shown    bool   // published holds the slots of the last commit
}

// keyState returns the state of key, creating it; b.mu is held.
func (b *Bus) keyState(key Key) *keyState {
	ks, ok := b.keys[key]
	if !ok {
		ks = &keyState{key: key, sunk: true, saved: true}
		b.keys[key] = ks
	}
	return ks
}

func (ks *keyState) hasWork() bool { return len(ks.queue) > 0 || ks.retryDue }

// enqueue queues an observation and wakes a worker.
func (b *Bus) enqueue(ctx context.Context, key Key, o observation) error {
	if err := key.validate(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.freeze(); err != nil {
		return err
	}
	ks := b.keyState(key)
	if len(ks.queue) >= b.maxBacklog {
		// Coalesce: the latest state replaces the backlog. The diff is
		// then taken from the last dispatched state, so no change is lost,
		// only intermediate states.
		b.queued -= len(ks.queue)
		clear(ks.queue)
		ks.queue = ks.queue[:0]
		o.coalesced = true
		o.hasOld, o.old = false, nil
		b.stats.coalesced.Add(1)
		b.log.Warn("opbus: backlog coalesced to the latest state", "key", key.String(), "bound", b.maxBacklog)
		if b.observer != nil {
			b.observer.Coalesced(key)
		}
	}
	ks.queue = append(ks.queue, o)
	b.queued++
	b.stats.observed.Add(1)
	if b.observer != nil {
		b.observer.Observed(key, b.queued)
	}
	b.schedule(ks)
	return nil
}

// schedule puts ks on the ready list if it has work and is not busy or
// listed, and keeps the idle channel; b.mu is held.
func (b *Bus) schedule(ks *keyState) {
	if ks.hasWork() && !ks.busy && !ks.queuedNow {
		ks.queuedNow = true
		b.ready = append(b.ready, ks)
		b.wake.Signal()
	}
	b.countPending()
}

// countPending recounts the keys with work (listed or being dispatched by a
// worker) and opens or closes the idle channel; b.mu is held.
func (b *Bus) countPending() {
	n := len(b.ready) + len(b.busy)
	wasIdle := b.pending == 0
	b.pending = n
	switch {
	case n == 0 && !wasIdle:
		close(b.idle)
	case n > 0 && wasIdle:
		b.idle = make(chan struct{})
	}
}

// take pops the next observation of ks; b.mu is held.
func (b *Bus) take(ks *keyState) (observation, bool) {
	if len(ks.queue) > 0 {
		o := ks.queue[0]
		ks.queue[0] = observation{}
		ks.queue = ks.queue[1:]
		if len(ks.queue) == 0 {
			ks.queue = nil
		}
		b.queued--
		return o, true
	}
	if ks.retryDue {
		ks.retryDue = false
		return observation{retry: true}, true
	}
	return observation{}, false
}

// Run dispatches queued states on a pool of workers until ctx ends. It then
// stops taking new work, waits for running handlers up to the shutdown
// timeout (then cancels their context), and saves every state that was
// observed but not handled in its object's record, so that it is handled
// after a restart. It returns nil after a clean shutdown, or the errors
// saving that work. Run can be called once.
func (b *Bus) Run(ctx context.Context) error {
	b.mu.Lock()
	if b.running || b.closed {
		b.mu.Unlock()
		return errors.New("opbus: Run called twice")
	}
	b.running = true
	b.frozen = true
	b.mu.Unlock()

	b.resumePending(ctx)

	hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	var wg sync.WaitGroup
	for range b.workers {
		wg.Go(func() { b.work(hctx) })
	}

	<-ctx.Done()
	b.mu.Lock()
	b.stopping = true
	b.wake.Broadcast()
	b.mu.Unlock()

	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(b.shutdown):
		b.log.Warn("opbus: shutdown timeout: cancelling running handlers", "timeout", b.shutdown)
		cancel()
		<-done
	}
	return b.persistPending(context.WithoutCancel(ctx))
}

func (b *Bus) work(ctx context.Context) {
	for {
		b.mu.Lock()
		for len(b.ready) == 0 && !b.stopping {
			b.wake.Wait()
		}
		if b.stopping {
			b.mu.Unlock()
			return
		}
		ks := b.ready[0]
		b.ready[0] = nil
		b.ready = b.ready[1:]
		ks.queuedNow = false
		if ks.busy { // held by Dispatch; it reschedules the key when done
			b.mu.Unlock()
			continue
		}
		ks.busy = true
		b.busy = append(b.busy, ks)
		o, ok := b.take(ks)
		b.mu.Unlock()

		if ok {
			if err := b.process(ctx, ks, o, true); err != nil {
				b.log.Debug("opbus: dispatch ended with errors", "key", ks.key.String(), "err", err)
			}
		}

		b.mu.Lock()
		ks.busy = false
		b.dropBusy(ks)
		b.schedule(ks)
		b.wake.Broadcast()
		b.mu.Unlock()
	}
}

func (b *Bus) dropBusy(ks *keyState) {
	for i, k := range b.busy {
		if k == ks {
			b.busy[i] = b.busy[len(b.busy)-1]
			b.busy[len(b.busy)-1] = nil
			b.busy = b.busy[:len(b.busy)-1]
			return
		}
	}
}

// retryLater schedules a retry of ks after d; only a running bus retries.
func (b *Bus) retryLater(ks *keyState, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.running {
		return // Dispatch: the caller decides
	}
	if b.stopping {
		ks.retryDue = true // saved as pending by persistPending
		return
	}
	if ks.retryTimer != nil {
		ks.retryTimer.Stop()
	}
	b.stats.retried.Add(1)
	if b.observer != nil {
		b.observer.Retrying(ks.key, d)
	}
	ks.retryTimer = time.AfterFunc(d, func() {
		b.mu.Lock()
		defer b.mu.Unlock()
		ks.retryTimer = nil
		if b.stopping {
			return
		}
		ks.retryDue = true
		b.schedule(ks)
	})
}

// resumePending queues the states an earlier run saved as pending.
func (b *Bus) resumePending(ctx context.Context) {
	l, ok := b.store.(Lister)
	if !ok {
		return
	}
	keys, err := l.Keys(ctx)
	if err != nil {
		b.log.Error("opbus: listing stored records", "err", err)
		return
	}
	for _, key := range keys {
		data, err := b.store.Load(ctx, key)
		if err != nil || data == nil {
			continue
		}
		rec, err := decodeRecord(key, data, b.index)
		if err != nil || rec.pending == nil {
			continue // a corrupt record is reported when its key is observed
		}
		o := observation{new: rec.pending.Object, deleted: rec.pending.Deleted}
		b.mu.Lock()
		_, observed := b.keys[key]
		if !observed {
			// Queued under the same lock as the check: a state observed
			// from now on is newer and queues behind it.
			ks := b.keyState(key)
			ks.queue = append(ks.queue, o)
			b.queued++
			b.schedule(ks)
		}
		b.mu.Unlock()
		if observed {
			continue // the source has given a newer state already
		}
		b.log.Info("opbus: resuming a state left pending by an earlier run", "key", key.String())
	}
}

// persistPending saves, for every key with work left, its latest observed
// state in its record.
func (b *Bus) persistPending(ctx context.Context) error {
	b.mu.Lock()
	b.closed = true
	var left []*keyState
	latest := map[*keyState]observation{}
	for _, ks := range b.keys {
		if ks.retryTimer != nil {
			ks.retryTimer.Stop()
			ks.retryTimer = nil
			ks.retryDue = true
		}
		if !ks.hasWork() {
			continue
		}
		left = append(left, ks)
		if n := len(ks.queue); n > 0 {
			latest[ks] = ks.queue[n-1]
		}
	}
	b.mu.Unlock()

	ctx, cancel := context.WithTimeout(ctx, b.shutdown)
	defer cancel()
	var errs []error
	for _, ks := range left {
		o, ok := latest[ks]
		if !ok { // only a retry is due: the current state is pending
			o = observation{new: ks.cur, deleted: ks.deleting}
		}
		if err := b.savePending(ctx, ks, o); err != nil {
			errs = append(errs, err)
		}
	}
	if len(left) > 0 {
		b.log.Info("opbus: saved pending work for the next run", "keys", len(left), "failed", len(errs))
	}
	return errors.Join(errs...)
}

func (b *Bus) savePending(ctx context.Context, ks *keyState, o observation) error {
	if ks.rec == nil {
		data, err := b.store.Load(ctx, ks.key)
		if err != nil {
			return err
		}
		if data == nil {
			ks.rec = newRecord(len(b.handlers))
		} else if ks.rec, err = decodeRecord(ks.key, data, b.index); err != nil {
			return err // never overwrite what cannot be read
		}
	}
	// The library's own writes (such as a record held in the object) are
	// left out, so records do not nest.
	ks.rec.pending = &pendingState{Object: b.cmp.Strip(o.new), Deleted: o.deleted}
	data, err := ks.rec.encode(b.ids)
	if err != nil {
		return err
	}
	if err := b.store.Save(ctx, ks.key, data); err != nil {
		b.log.Error("opbus: saving pending work", "key", ks.key.String(), "err", err)
		return err
	}
	b.log.Debug("opbus: saved pending state", slog.String("key", ks.key.String()))
	return nil
}
