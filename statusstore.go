package opbus

import "context"

// StatusStore is implemented by a [Store] that keeps each record on the
// object whose status its own [StatusSink] writes, and can write the two
// in one request (the Kubernetes adapter, for kinds whose status is an
// annotation). When a pass changed both its record and its status, the bus
// calls SaveStatus instead of Save and PutStatus (rule 22b): one write
// instead of two, and the record and the status land together.
type StatusStore interface {
	Store

	// SaveStatus replaces the record of key with data and publishes its
	// status, as Save and sink.PutStatus would, in one write. It reports
	// false, having written nothing, when it cannot: sink is not the one
	// it pairs with, or the two cannot go in one request for this key. The
	// bus then calls Save and PutStatus. When it reports true, an error
	// means neither was written.
	SaveStatus(ctx context.Context, sink StatusSink, key Key, data []byte, obj map[string]any, overall Status, slots Slots) (bool, error)
}
