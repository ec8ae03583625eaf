package opbus

import (
	"fmt"
	"strings"
)

// EventType says what happened to an object.
type EventType int

// The event types. The zero EventType is not a valid type.
const (
	// Create: a handler sees the object for the first time (it has no
	// committed value for it yet).
	Create EventType = iota + 1
	// Update: a subscribed value differs from the one last handled.
	Update
	// Delete: the object is gone (or, with a finalizer, going).
	Delete
	// Resume: the program started and found the object already known to
	// the store. Resume handlers run once per object per Bus.
	Resume
)

var eventWords = [...]string{"", "create", "update", "delete", "resume"}

// String returns the type's lower-case name.
func (t EventType) String() string {
	if t > 0 && int(t) < len(eventWords) {
		return eventWords[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// MarshalText encodes the type as its name.
func (t EventType) MarshalText() ([]byte, error) {
	if t <= 0 || int(t) >= len(eventWords) {
		return nil, fmt.Errorf("opbus: cannot encode %v: not an event type", t)
	}
	return []byte(eventWords[t]), nil
}

// UnmarshalText decodes an event type name.
func (t *EventType) UnmarshalText(b []byte) error {
	for i, w := range eventWords[1:] {
		if w == string(b) {
			*t = EventType(i + 1)
			return nil
		}
	}
	return fmt.Errorf("opbus: unknown event type %q: expected one of %s", b, strings.Join(eventWords[1:], ", "))
}
