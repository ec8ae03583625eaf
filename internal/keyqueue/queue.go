package keyqueue

import (
	"errors"
	"sync"
	"time"
)

// ErrDraining is returned (wrapped) by a wait that the queue's Drain or
// Halt ended.
var ErrDraining = errors.New("keyqueue: draining")

// Tag is what the queue keeps of an item, in the item itself: the item
// type holds one, which Options.Tag finds, so that what the queue knows
// of an item travels with it (taken, put back, handed on) and is never
// copied beside it.
type Tag struct {
	Seq     uint64 // order of arrival; 0 for an item made by the caller
	Awaited bool   // a caller waits to take it itself (AddAwaited)
}

// Options configures a Queue. Lock and Tag are required; the rest may be
// zero.
type Options[K comparable, T any] struct {
	// Lock guards the queue: the caller holds it across every call.
	Lock sync.Locker
	// Tag returns the tag that item holds (see [Tag]).
	Tag func(item *T) *Tag
	// Clock arms the retry timers; nil means the system clock.
	Clock Clock
	// MaxBacklog is the number of queued items of a key past which Add
	// calls Coalesce; 0 means no bound.
	MaxBacklog int
	// Coalesce, called by Add when a key has MaxBacklog items queued,
	// gets them with the new item last, and returns those to keep, in
	// order (it may reuse the slice). It must keep awaited items and the
	// last one. Nil keeps every item.
	Coalesce func(k K, items []T) []T
	// HandOver reports whether held key k may be listed all the same: its
	// holder gives it up to whoever pops it (a key whose holder only
	// waits for something to finish). Nil means never.
	HandOver func(k K) bool
	// Listed is called, under the lock, each time a key is listed.
	Listed func(k K)
	// Changed is called, under the lock, after each change of what is
	// listed, held or pending (for a caller that checks invariants).
	Changed func()
}

// entry is the queue's state of one key; a key without any is not in
// Queue.keys (invariant 7).
type entry[T any] struct {
	items    []T
	listed   bool // on the ready list
	held     bool // in the held set
	blocked  bool // items do not move until a retry
	due      bool // a retry is due: taken before the items
	awaiting int  // callers waiting in Await
	timer    Timer
	timerSeq uint64 // the timer that may fire; older ones are stale
	timerAt  time.Time
}

func (e *entry[T]) empty() bool {
	return len(e.items) == 0 && !e.listed && !e.held && !e.blocked && !e.due && e.awaiting == 0 && e.timer == nil
}

func (e *entry[T]) hasWork() bool { return (len(e.items) > 0 && !e.blocked) || e.due }

// Queue is a per-key ordered queue; see the package documentation.
type Queue[K comparable, T any] struct {
	opt      Options[K, T]
	keys     map[K]*entry[T]
	free     []*entry[T] // entries to reuse, so that the steady state allocates nothing
	ready    []K
	held     []K
	queued   int
	pending  int
	outside  bool
	seq      uint64
	timerSeq uint64
	draining bool
	halted   bool
	idle     chan struct{} // closed when pending reaches 0
	readied  chan struct{} // closed when a key is listed
	changed  chan struct{} // closed at the next Notify
}

// New returns an empty Queue. It panics without opt.Lock or opt.Tag.
func New[K comparable, T any](opt Options[K, T]) *Queue[K, T] {
	if opt.Lock == nil {
		panic("keyqueue: Options.Lock is nil: expected the lock that guards the queue")
	}
	if opt.Tag == nil {
		panic("keyqueue: Options.Tag is nil: expected the function that finds an item's tag")
	}
	if opt.Clock == nil {
		opt.Clock = systemClock{}
	}
	return &Queue[K, T]{opt: opt, keys: map[K]*entry[T]{}}
}

// get returns the entry of k, making it.
func (q *Queue[K, T]) get(k K) *entry[T] {
	if e := q.keys[k]; e != nil {
		return e
	}
	var e *entry[T]
	if n := len(q.free); n > 0 {
		e, q.free = q.free[n-1], q.free[:n-1]
	} else {
		e = &entry[T]{}
	}
	q.keys[k] = e
	return e
}

// tidy forgets k if its entry holds nothing.
func (q *Queue[K, T]) tidy(k K, e *entry[T]) {
	if !e.empty() {
		return
	}
	delete(q.keys, k)
	items := e.items[:0]
	if cap(items) > 4 {
		items = nil // a long backlog's array is not kept
	}
	*e = entry[T]{items: items}
	if len(q.free) < 64 {
		q.free = append(q.free, e)
	}
}

// Keys returns the keys the queue has something of, in no order: for
// checks.
func (q *Queue[K, T]) Keys() []K {
	out := make([]K, 0, len(q.keys))
	for k := range q.keys {
		out = append(out, k)
	}
	return out
}

// LastSeq returns the last sequence number given.
func (q *Queue[K, T]) LastSeq() uint64 { return q.seq }

// Len returns the number of items queued across all keys.
func (q *Queue[K, T]) Len() int { return q.queued }

// KeyLen returns the number of items queued for k.
func (q *Queue[K, T]) KeyLen(k K) int {
	if e := q.keys[k]; e != nil {
		return len(e.items)
	}
	return 0
}

// Items returns the items queued for k, oldest first; the slice is the
// queue's, to read before the next change.
func (q *Queue[K, T]) Items(k K) []T {
	if e := q.keys[k]; e != nil {
		return e.items
	}
	return nil
}

// NewSeq returns the next sequence number without queueing an item: for
// an item that a holder takes at once, with nothing queued before it.
func (q *Queue[K, T]) NewSeq() uint64 {
	q.seq++
	return q.seq
}

// Add queues v as the latest item of k, coalescing past the bound, lists
// k if it may be taken, and returns the item's sequence number (set in
// the tag of the item queued, v's copy).
func (q *Queue[K, T]) Add(k K, v T) uint64 { return q.add(k, v, false) }

// AddAwaited is Add for an item that the caller will take itself, after
// Await: no other holder takes it, and Coalesce must keep it.
func (q *Queue[K, T]) AddAwaited(k K, v T) uint64 { return q.add(k, v, true) }

func (q *Queue[K, T]) add(k K, v T, awaited bool) uint64 {
	e := q.get(k)
	e.items = append(e.items, v)
	q.queued++
	tag := q.opt.Tag(&e.items[len(e.items)-1]) // tagged in place: v does not escape
	tag.Seq, tag.Awaited = q.NewSeq(), awaited
	seq := tag.Seq
	if n := len(e.items); q.opt.Coalesce != nil && q.opt.MaxBacklog > 0 && n > q.opt.MaxBacklog {
		kept := q.opt.Coalesce(k, e.items)
		clear(e.items[min(len(kept), n):]) // what was coalesced away, if kept is e.items'
		e.items = kept
		q.queued += len(kept) - n
	}
	q.List(k)
	return seq
}

// PushFront puts items back at the head of k's queue, oldest first, as
// its holder does with items it took and did not finish.
func (q *Queue[K, T]) PushFront(k K, items ...T) {
	if len(items) == 0 {
		return
	}
	e := q.get(k)
	e.items = append(append(make([]T, 0, len(items)+len(e.items)), items...), e.items...)
	q.queued += len(items)
}

// Take pops the next item of k for its holder: none while k is blocked,
// unless force, and none if the next is awaited by a caller other than
// the one whose item is own (0: none).
func (q *Queue[K, T]) Take(k K, force bool, own uint64) (T, bool) {
	var zero T
	e := q.keys[k]
	if e == nil || len(e.items) == 0 || (e.blocked && !force) || q.awaitedByOther(e, own) {
		return zero, false
	}
	it := e.items[0]
	e.items[0] = zero
	e.items = e.items[1:]
	if len(e.items) == 0 {
		e.items = nil
	}
	q.queued--
	q.tidy(k, e)
	return it, true
}

func (q *Queue[K, T]) awaitedByOther(e *entry[T], own uint64) bool {
	if len(e.items) == 0 {
		return false
	}
	tag := q.opt.Tag(&e.items[0])
	return tag.Awaited && tag.Seq != own
}

// AwaitedHead reports whether the next item of k is an awaited one.
func (q *Queue[K, T]) AwaitedHead(k K) bool {
	e := q.keys[k]
	return e != nil && len(e.items) > 0 && q.opt.Tag(&e.items[0]).Awaited
}

// AwaitedByOther reports whether the next item of k is awaited by a
// caller other than the one whose item is own.
func (q *Queue[K, T]) AwaitedByOther(k K, own uint64) bool {
	e := q.keys[k]
	return e != nil && q.awaitedByOther(e, own)
}

// Disown leaves the item seq of k, if still queued, to whoever takes the
// queue next: it is awaited no more.
func (q *Queue[K, T]) Disown(k K, seq uint64) {
	if e := q.keys[k]; e != nil {
		for i := range e.items {
			if tag := q.opt.Tag(&e.items[i]); tag.Seq == seq {
				tag.Awaited = false
			}
		}
	}
}

// Block stops or lets go k's items until its next retry: while blocked,
// only a forced Take takes them.
func (q *Queue[K, T]) Block(k K, blocked bool) {
	if !blocked {
		if e := q.keys[k]; e != nil && e.blocked {
			e.blocked = false
			q.tidy(k, e)
		}
		return
	}
	e := q.get(k)
	e.blocked = true
}

// Blocked reports whether k's items wait for a retry (Block).
func (q *Queue[K, T]) Blocked(k K) bool {
	e := q.keys[k]
	return e != nil && e.blocked
}

// HasWork reports whether k has an item that may be taken (not blocked)
// or a due retry.
func (q *Queue[K, T]) HasWork(k K) bool {
	e := q.keys[k]
	return e != nil && e.hasWork()
}

// Runnable reports whether k's next item may be taken now by a holder
// that awaits none: one is queued, k is not blocked, no retry is due
// (it goes first), and the item is not awaited.
func (q *Queue[K, T]) Runnable(k K) bool {
	e := q.keys[k]
	return e != nil && len(e.items) > 0 && !e.blocked && !e.due && !q.opt.Tag(&e.items[0]).Awaited
}
