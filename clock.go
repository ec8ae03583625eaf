package opbus

import "time"

// Clock is where a Bus reads the time and arms the timers of its retries
// and schedules ([On.Every], [Event.Again], failed handlers' backoff, a
// store's backoff), and where [Bus.Settle] waits for them. Nil in
// [Options] means the system clock. A test gives the bus a clock it moves
// by hand (opbustest.Clock) to exercise an hour of schedules in
// milliseconds. What is measured rather than scheduled — how long a
// handler or a write took, the shutdown timeout — stays on the system
// clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless
	// the returned timer is stopped first; as time.AfterFunc.
	AfterFunc(d time.Duration, f func()) ClockTimer
}

// ClockTimer is a timer armed by [Clock.AfterFunc].
type ClockTimer interface {
	// Stop prevents the call, reporting whether it did; as
	// time.Timer.Stop.
	Stop() bool
}

// systemClock is the default Clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) ClockTimer { return time.AfterFunc(d, f) }

// now returns the time on the bus's clock.
func (b *Bus) now() time.Time { return b.cfg.clock.Now() }

// until returns the time from now until t on the bus's clock.
func (b *Bus) until(t time.Time) time.Duration { return t.Sub(b.cfg.clock.Now()) }
