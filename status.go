package opbus

import (
	"fmt"
	"slices"
	"strings"
)

// Level is how much attention an object needs, ordered so that the highest
// level among an object's slots is its overall level. The words are Juju's.
type Level int

// The levels, lowest first. The zero Level is LevelUnknown: no opinion.
const (
	LevelUnknown     Level = iota // no opinion
	LevelActive                   // working as intended
	LevelWaiting                  // waiting for something outside its control
	LevelMaintenance              // doing work it will finish on its own
	LevelBlocked                  // needs a human to act
	LevelError                    // a handler failed
)

var levelWords = [...]string{"unknown", "active", "waiting", "maintenance", "blocked", "error"}

// String returns the level as Juju writes it, such as "blocked".
func (l Level) String() string {
	if l >= 0 && int(l) < len(levelWords) {
		return levelWords[l]
	}
	return fmt.Sprintf("Level(%d)", int(l))
}

// check reports a level that is not one of the declared levels.
func (l Level) check() error {
	if l < 0 || int(l) >= len(levelWords) {
		return fmt.Errorf("opbus: level %d is not a level: expected LevelUnknown to LevelError (0 to %d)", int(l), len(levelWords)-1)
	}
	return nil
}

// parseLevel returns the Level named by one of Juju's words: unknown, active,
// waiting, maintenance, blocked or error.
func parseLevel(s string) (Level, error) {
	for i, w := range levelWords {
		if w == s {
			return Level(i), nil
		}
	}
	return 0, fmt.Errorf("opbus: unknown status level %q: expected one of %s", s, strings.Join(levelWords[:], ", "))
}

// MarshalText encodes the level as its word.
func (l Level) MarshalText() ([]byte, error) {
	if l < 0 || int(l) >= len(levelWords) {
		return nil, fmt.Errorf("opbus: cannot encode %v: not a level", l)
	}
	return []byte(levelWords[l]), nil
}

// UnmarshalText decodes a level word; an unknown word is an error.
func (l *Level) UnmarshalText(b []byte) error {
	v, err := parseLevel(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// Status is a level with a message for people and, optionally, a reason
// for programs. The zero Status means "no opinion": a handler returning it
// clears its slot.
type Status struct {
	Level   Level  `json:"level"`
	Message string `json:"message,omitempty"`
	// Reason is a machine-readable CamelCase word saying why, such as
	// "InvalidSchedule"; "" means the level's own word. It has the syntax
	// of a Kubernetes condition reason: a letter, then letters, digits,
	// '_', ',' or ':', not ending in ',' or ':', at most 1024 bytes. The
	// bus refuses any other (see [Status.WithReason]). Adapters that have
	// no place for it (Juju's status-set) ignore it.
	Reason string `json:"reason,omitempty"`
}

// Active returns a Status at [LevelActive].
func Active(msg string) Status { return Status{Level: LevelActive, Message: msg} }

// Waiting returns a Status at [LevelWaiting].
func Waiting(msg string) Status { return Status{Level: LevelWaiting, Message: msg} }

// Maintenance returns a Status at [LevelMaintenance].
func Maintenance(msg string) Status { return Status{Level: LevelMaintenance, Message: msg} }

// Blocked returns a Status at [LevelBlocked].
func Blocked(msg string) Status { return Status{Level: LevelBlocked, Message: msg} }

// ErrorStatus returns a Status at [LevelError].
func ErrorStatus(msg string) Status { return Status{Level: LevelError, Message: msg} }

// IsZero reports whether s is the zero Status, "no opinion".
func (s Status) IsZero() bool { return s == Status{} }

// WithReason returns s with its Reason set to reason, a CamelCase word
// such as "InvalidSchedule" (see [Status].Reason):
//
//	return opbus.Blocked("spec.schedule is not a cron line").WithReason("InvalidSchedule"), nil
//
// A handler or collector that returns a status with a reason of another
// syntax fails: its slot shows an Error status naming the reason.
func (s Status) WithReason(reason string) Status {
	s.Reason = reason
	return s
}

// String formats the status as "level: message", or just the level, with
// the reason in parentheses after the level when it has one ("blocked
// (InvalidSchedule): …"); the zero Status, which a slot never holds, is
// "(no status)".
func (s Status) String() string {
	if s.IsZero() {
		return "(no status)"
	}
	head := s.Level.String()
	if s.Reason != "" {
		head += " (" + s.Reason + ")"
	}
	if s.Message == "" {
		return head
	}
	return head + ": " + s.Message
}

// maxReason bounds a [Status].Reason, as a Kubernetes condition's reason.
const maxReason = 1024

// check reports a status the bus cannot keep: a level that is not one, or
// a reason that is not a CamelCase word.
func (s Status) check() error {
	if err := s.Level.check(); err != nil {
		return err
	}
	if s.Reason != "" && !validReason(s.Reason) {
		return fmt.Errorf("opbus: status reason %q is not a reason: expected a CamelCase word such as \"InvalidSchedule\" (a letter, then letters, digits, '_', ',' or ':', not ending in ',' or ':'; at most %d bytes)", s.Reason, maxReason)
	}
	return nil
}

// validReason reports whether r matches a Kubernetes condition reason,
// ^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$, at most maxReason bytes.
func validReason(r string) bool {
	if r == "" || len(r) > maxReason {
		return false
	}
	for i := 0; i < len(r); i++ {
		c := r[i]
		letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
		switch {
		case i == 0 && !letter:
			return false
		case letter, c >= '0' && c <= '9', c == '_':
		case (c == ',' || c == ':') && i < len(r)-1:
		default:
			return false
		}
	}
	return true
}

// summarize folds slots into one overall Status; see [Slots.Summary].
func summarize(slots map[string]Status) Status {
	top := Status{}
	var names []string
	for name, s := range slots {
		if s.IsZero() {
			continue
		}
		switch {
		case names == nil || s.Level > top.Level:
			top.Level = s.Level
			names = append(names[:0], name)
		case s.Level == top.Level:
			names = append(names, name)
		}
	}
	if names == nil {
		return Status{}
	}
	slices.Sort(names)
	var msgs []string
	for _, n := range names {
		if m := slots[n].Message; m != "" {
			msgs = append(msgs, m)
		}
	}
	top.Message = strings.Join(msgs, "; ")
	for _, n := range names {
		if r := slots[n].Reason; r != "" {
			top.Reason = r // the first deciding slot's, in slot-name order
			break
		}
	}
	return top
}
