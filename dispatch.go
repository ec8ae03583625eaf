package opbus

import (
	"context"
	"errors"
	"fmt"

	"github.com/opbus/opbus/internal/holding"
	"github.com/opbus/opbus/internal/keyqueue"
)

// Dispatch handles obj as the latest state of key synchronously, on the
// calling goroutine, after any states of key observed before it, and
// returns the errors of its own pass: its handlers' errors joined (nil when
// all succeeded) and any error storing the record or publishing the status.
// Without Run, failed handlers are not retried by the bus: the caller
// decides, as a Juju hook does by failing the hook; the next Dispatch of
// key runs them again whatever their backoff. With Run, the bus retries
// them as for an observed state. ctx is passed to the handlers. After Run
// has begun to stop, Dispatch returns [ErrClosed] and handles nothing; a
// call that was waiting for its busy key then returns an error wrapping
// ErrClosed, its state (queued when the call was made, before any state
// observed while it waited) saved as pending. A call waiting for its busy
// key returns when ctx ends, its state left queued. A call made with the
// context of a pass of key (from one of key's handlers, directly or
// through other objects' handlers) returns an error at once; calls that
// wait for each other through different keys are not detected, so give
// such calls a deadline.
func (b *Bus) Dispatch(ctx context.Context, key Key, obj map[string]any) error {
	return b.dispatchNow(ctx, key, observation{new: obj})
}

// DispatchDelete is Dispatch for the deletion of key.
func (b *Bus) DispatchDelete(ctx context.Context, key Key, last map[string]any) error {
	return b.dispatchNow(ctx, key, observation{new: last, deleted: true})
}

func (b *Bus) dispatchNow(ctx context.Context, key Key, o observation) error {
	to, err := b.admit(ctx, key, &o)
	if err != nil {
		return err
	}
	b.mu.Lock()
	ks, first, mine, err := b.queueAwaited(ctx, key, &o)
	if err != nil {
		b.mu.Unlock()
		return err
	}
	b.relay(key, o, to)
	if err := b.awaitKey(ctx, ks, mine); err != nil {
		b.mu.Unlock()
		return err
	}
	if !b.owns(key) {
		// Released while the call waited: its state is saved as pending
		// for the key's next owner (own.go).
		b.release(ks)
		b.mu.Unlock()
		return notOwned("dispatch", key)
	}
	b.mu.Unlock()
	ctx, h := holding.With(ctx, ks) // a handler that dispatches ks is refused (rule 5)
	held, err := b.passesUntil(ctx, ks, first, mine)
	h.End()
	if held {
		b.mu.Lock()
		b.q.kq.Disown(ks, mine) // left queued: the next pass of the key takes it
		b.release(ks)
		b.mu.Unlock()
	}
	return err
}

// queueAwaited queues o, the state of a Dispatch call, for that call
// alone, or returns it as first when nothing goes before it, so that it
// needs no queue, with its number, mine; b.mu is held.
func (b *Bus) queueAwaited(ctx context.Context, key Key, o *observation) (ks *keyState, first *observation, mine uint64, err error) {
	if err := b.freeze(); err != nil {
		return nil, nil, 0, err
	}
	if b.stopping {
		return nil, nil, 0, ErrClosed
	}
	if !b.owns(key) {
		return nil, nil, 0, notOwned("dispatch", key) // own.go
	}
	if ks := b.q.keys[key]; ks != nil && b.q.kq.Held(ks) && holding.Holds(ctx, ks) {
		return nil, nil, 0, fmt.Errorf("opbus: dispatch of %v from inside a pass of that object (a handler's context): the call would wait for its own pass; nothing is queued (use Observe to queue the state)", key)
	}
	ks = b.keyState(key)
	// Only this call takes its state, and the state is never coalesced
	// away: the call returns its pass's errors. Marked also when it needs no
	// queue, since its pass may put it back in the queue behind states that
	// go first (pending ones, or the deletion of a replaced incarnation).
	o.tag.Awaited = true
	if kq := b.q.kq; !kq.Held(ks) && kq.KeyLen(ks) == 0 && !ks.deleting && !kq.Blocked(ks) {
		// With nothing queued before it, the state needs no queue.
		o.tag.Seq = b.q.kq.NewSeq()
		ks.observed(o)
		return ks, o, o.tag.Seq, nil
	}
	// Queued now, even while the key is busy, so that a state observed
	// while this call waits goes after it (rule 5). Queued, it also keeps
	// ks in queues.keys.
	return ks, nil, b.push(ks, *o), nil
}

// passesUntil makes the passes of ks, which the call holds, until the one
// of its own state, mine (given as first if it needs no queue), and
// returns that pass's errors; or it stops early and says why. held says
// whether the call still holds ks: not when it gave the key to another
// call and its wait for it ended.
func (b *Bus) passesUntil(ctx context.Context, ks *keyState, first *observation, mine uint64) (held bool, err error) {
	for {
		got, ok, perr := b.step(ctx, ks, true, first, mine)
		first = nil
		switch {
		case !ok:
			b.mu.Lock()
			if !b.q.kq.AwaitedByOther(ks, mine) {
				b.mu.Unlock()
				return true, fmt.Errorf("opbus: dispatch of %v: the state was not dispatched", ks.key)
			}
			// Another waiting call's state is next, older than this one:
			// leave the key to it, and wait.
			b.release(ks)
			err := b.awaitKey(ctx, ks, mine)
			b.mu.Unlock()
			if err != nil {
				return false, err
			}
		case got.tag.Seq == mine:
			return true, perr
		case ks.rec == nil && perr != nil:
			return true, perr // the record cannot be loaded: the state stays queued
		case ks.deleting:
			return true, fmt.Errorf("opbus: dispatch of %v: the deletion of its previous incarnation is not finished; the state waits behind it: %w", ks.key, perr)
		case b.isStopping():
			// The state stays queued: Run saves it as pending.
			return true, fmt.Errorf("opbus: dispatch of %v: the bus is stopping; the state is saved as pending: %w", ks.key, ErrClosed)
		}
	}
}

// awaitKey waits until no one else dispatches ks and no other Dispatch
// call's state is next, then makes the call whose state is seq the holder
// of ks; b.mu is held (the keyqueue's hand-off, Await). Run leaves an
// awaited key to the call. If the bus begins to stop meanwhile, the state
// stays queued, to be saved as pending, and awaitKey returns an error
// wrapping [ErrClosed]; if ctx ends, the state stays queued, to be
// handled as an observed state is, and awaitKey returns an error wrapping
// ctx's.
func (b *Bus) awaitKey(ctx context.Context, ks *keyState, seq uint64) error {
	err := b.q.kq.Await(ctx, ks, seq)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, keyqueue.ErrDraining):
		return fmt.Errorf("opbus: dispatch of %v: the bus is stopping; the state is saved as pending: %w", ks.key, ErrClosed)
	default:
		// No call waits for it now: Run, Wait or the next Dispatch takes it.
		return fmt.Errorf("opbus: dispatch of %v: waiting for the object's pass under way: %w; the state stays queued, to be handled as an observed state is", ks.key, err)
	}
}
