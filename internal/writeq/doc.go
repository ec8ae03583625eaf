// Package writeq is the mechanism of a write stage in the manner of a
// batcher: the results of a key's passes go to a store one write at a
// time, later results merge into the next write, and N writes at most are
// under way across all keys. What a write is, what it carries and when a
// result may wait are the caller's; this package keeps the bookkeeping.
//
// # Words
//
//   - A *write* is the durable form of one result of a key (a record and a
//     status, for the bus). It is *in flight* from Flight.Start until
//     Flight.MarkFinished; its goroutine makes it while the key's next
//     pass runs *beside* it.
//   - A result *queued behind* the write in flight, or *merged* into the
//     next pass's, is *owed*: the next write carries it. The Backlog of a
//     key counts the results owed since its last write began and keeps the
//     statuses they published, for the sink, in order.
//   - A *Key* is what the loop that owns a key holds of its writes: the
//     write in flight and the Backlog of the next. A pass returns its
//     write to that loop, which puts it in flight (Key.Begin) and joins
//     it (Key.Join) before the key writes again; nothing in the pass
//     reaches for it otherwise.
//   - A *Cycle* is a key's write cycle as its loop drives it: the Key,
//     the passes the loop made of the key, and whether the caller keeps
//     the key's state for a stop. For each pass the loop asks it where
//     the write goes (a *Route*: merged into the next pass, queued behind
//     the write in flight, beside the next pass, or inline), then what to
//     do next (run the next state, park the key, flush what is owed, or
//     be done). The caller supplies what only it knows (Facts) and its
//     bounds (Limits), and makes the writes.
//   - A *Loop* is a Cycle with the write slot its loop holds: it keeps
//     the order of the key's writes for the loop (JoinIn, JoinFree,
//     ToWrite), calling back its *Owner*, the caller's loop state, to
//     free a handler slot and take a joined write's outcome in.
//   - A key is *parked* when no loop holds it while its write is in
//     flight: its Key waits in a Parking until a loop takes it over for
//     its next result, or the write's goroutine claims it once the write
//     returned, makes the write its backlog owes, and lets the key go;
//     the caller's *Writer* makes the writes and takes a claimed key's
//     outcome in (Parking.Out).
//   - A Write is what one write carries (a record, a status, the statuses
//     queued before it) and, once Make made it through the caller's
//     Store, what it did.
//   - A slot is the right to make a write now; Slots holds N of them.
//   - The *cost* of a write is its duration; Cost keeps their moving
//     average, which decides whether a write is worth a goroutine of its
//     own (beside) or is made inline.
//
// # Invariants
//
// Each type states its own; together (Parking.Check, Cycle.Check and
// the tests name them by number):
//
//  1. At most one write in flight per key: a Key begins a write only once
//     the last was joined (Begin panics otherwise), and a key's Key is in
//     one place at a time, with its loop or in the Parking, parked at most
//     once and only with a write in flight (Park panics otherwise;
//     Parking.Check reports a parking that breaks it).
//  2. A Flight is started once, marked finished once and closed once, in
//     that order; Done closes at Close, never before, and Finished
//     reports true from MarkFinished on.
//  3. Owed results merge: a Backlog has at most one set of owed results,
//     whatever their number; the write that takes them (Take) carries the
//     latest and clears it. Consecutive equal statuses are kept once. A
//     Backlog over its caller's limit (Over) says the next result must
//     wait for the write instead of queueing behind it.
//  4. At most N writes under way: Take blocks while N slots are taken;
//     every Take is matched by exactly one Free.
//  5. Hand-off: a parked key goes to exactly one of a loop (TakeOver) and
//     the goroutine of the write it is parked on (Claim), whichever comes
//     first under the caller's lock; a goroutine whose write the key is
//     no longer parked on leaves the key to the loop that joins it.
//     Parking.Out is that goroutine: it claims only after the write
//     returned and was marked finished, and a key it claimed is its own
//     until it parks the next write or lets the key go.
//  6. Abandon: a Backlog that is dropped (Reset) owes nothing; what a
//     stop must still keep of it is the caller's to save before. A
//     write's goroutine that finds its key abandoned (at a halt, or past
//     the shutdown timeout) ends without writing and still marks its
//     Flight finished and closes it, so that nobody waits for it forever.
//     The check and the store call are made under the key's stripe
//     (Stripes; Make holds it, Store.Stripe, across the record's save),
//     under which Abandon marks the key: a write under way ends before
//     Abandon returns, and none begins after. Make writes no status of a
//     key its Store reports dropped (the Write is Skipped).
//  7. A write's statuses keep their order: Make hands the sink the
//     statuses queued before it first, in order, stopping at the first
//     it refuses, then the record and the write's own status, as one
//     write when the Store can.
//  8. A write is owed only by a pass that was counted: a Cycle's Backlog
//     never owes with no pass counted since its last write began.
//  9. What is owed is bounded and never risky: a Cycle routes to Merge
//     only while fewer than Limits.Merged passes are owed and a next
//     state may run now, to Behind only while the write in flight runs
//     and at most Limits.Queued passes were counted since it began, and
//     never routes a failed pass, a flush, or a pass while the caller
//     stops to either; it says Run only below Limits.Taken passes, with
//     a handler slot, while the caller does not stop.
//  10. A Cycle whose write is in flight or owed keeps its key's state for
//     a stop (Kept): a stop that abandons the key can save what it owes.
package writeq
