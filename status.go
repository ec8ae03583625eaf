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

// Status is a level with a message for people. The zero Status means "no
// opinion": a handler returning it clears its slot.
type Status struct {
	Level   Level  `json:"level"`
	Message string `json:"message,omitempty"`
}

// Active returns a Status at [LevelActive].
func Active(msg string) Status { return Status{LevelActive, msg} }

// Waiting returns a Status at [LevelWaiting].
func Waiting(msg string) Status { return Status{LevelWaiting, msg} }

// Maintenance returns a Status at [LevelMaintenance].
func Maintenance(msg string) Status { return Status{LevelMaintenance, msg} }

// Blocked returns a Status at [LevelBlocked].
func Blocked(msg string) Status { return Status{LevelBlocked, msg} }

// ErrorStatus returns a Status at [LevelError].
func ErrorStatus(msg string) Status { return Status{LevelError, msg} }

// IsZero reports whether s is the zero Status, "no opinion".
func (s Status) IsZero() bool { return s == Status{} }

// String formats the status as "level: message", or just the level; the
// zero Status, which a slot never holds, is "(no status)".
func (s Status) String() string {
	if s.IsZero() {
		return "(no status)"
	}
	if s.Message == "" {
		return s.Level.String()
	}
	return s.Level.String() + ": " + s.Message
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
	return top
}
