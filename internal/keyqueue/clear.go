package keyqueue

// Clear takes every item of k out of the queue, awaited ones included,
// disarms its retry timer and forgets a due retry and a block, and returns
// the items, oldest first: for a holder that gives k up for good (the bus
// handing k to another process). The caller holds k.
func (q *Queue[K, T]) Clear(k K) []T {
	e := q.keys[k]
	if e == nil {
		return nil
	}
	items := e.items
	e.items = nil
	q.queued -= len(items)
	if e.timer != nil {
		e.timer.Stop()
		e.timer = nil
	}
	e.timerSeq, e.due, e.blocked = 0, false, false
	q.tidy(k, e)
	q.recount()
	return items
}
