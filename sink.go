package opbus

import (
	"context"
)

// StatusSink publishes objects' statuses: Kubernetes conditions, Juju's
// status-set, a log line. The bus calls PutStatus after a dispatch of key
// changed its overall status or any slot, and again on a later dispatch if
// a call failed. Calls for one key never overlap; calls for different keys
// may run concurrently. obj is the latest state (nil when the object is
// gone); slots is a copy the sink may keep. A cancelled ctx should abandon
// the call.
type StatusSink interface {
	PutStatus(ctx context.Context, key Key, obj map[string]any, overall Status, slots Slots) error
}

// DeleteSink is implemented by a StatusSink that must know when every
// delete handler of an object has succeeded, for example to remove a
// finalizer. The bus has then deleted the object's record.
type DeleteSink interface {
	Deleted(ctx context.Context, key Key, last map[string]any) error
}
