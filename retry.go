package opbus

import (
	"time"

	"github.com/opbus/opbus/internal/backoff"
)

// Permanent wraps err so that the handler is not retried until its value
// changes. Permanent(nil) is nil.
func Permanent(err error) error {
	return backoff.Permanent(err, ErrPermanent)
}

// RetryAfter returns an error that asks for the next attempt after d instead
// of the backoff's delay. A nil err reads as "not done yet". It is a
// failure: the slot shows an error and, under Juju, the hook fails. To
// poll without failing ("handled for now, look again after d"), return a
// nil error and call [Event.Again].
func RetryAfter(d time.Duration, err error) error {
	return backoff.After(d, err)
}

// Backoff spaces out the retries of a failing handler: the n-th retry waits
// Initial·Factorⁿ⁻¹, capped at Max, scaled by a random factor in
// [1-Jitter, 1+Jitter]. The zero Backoff means 1s, ×2, capped at 5m (or at
// Initial, if longer), ±20%; each zero field takes its default, and a
// negative Jitter means none.
// [New] rejects a Factor below 1, a Jitter of 1 or more, and a Max below
// Initial.
type Backoff struct {
	Initial time.Duration
	Max     time.Duration
	Factor  float64
	Jitter  float64
}

// withDefaults returns b with its defaults filled in (internal/backoff).
func (b Backoff) withDefaults() Backoff { return Backoff(backoff.Policy(b).WithDefaults()) }

// check reports a field that cannot be used, naming it.
func (b Backoff) check() error { return backoff.Policy(b).Check("opbus: Options.Backoff") }

// delay returns the wait before retry number n (1 for the first retry); b
// has its defaults (withDefaults).
func (b Backoff) delay(n int) time.Duration { return backoff.Policy(b).Delay(n) }
