package opbustest

import (
	"slices"
	"sync"
	"time"

	"github.com/opbus/opbus"
)

// Clock is an [opbus.Clock] that moves only when told: give it to a bus
// ([opbus.Options].Clock) to run an hour of its schedules, retries and
// backoff in milliseconds of a test. Its timers fire, in the order they are
// due, when [Clock.Advance] or [Clock.Set] passes their time. The zero
// Clock is not usable: use [NewClock].
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*clockTimer
}

var _ opbus.Clock = (*Clock)(nil)

// NewClock returns a Clock that reads start until it is moved.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

type clockTimer struct {
	c   *Clock
	at  time.Time
	seq uint64 // arming order, for timers due at the same time
	f   func()
}

// Stop implements [opbus.ClockTimer].
func (t *clockTimer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	i := slices.Index(t.c.timers, t)
	if i < 0 {
		return false
	}
	t.c.timers = slices.Delete(t.c.timers, i, i+1)
	return true
}

// Now implements [opbus.Clock].
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc implements [opbus.Clock]: f runs, on a goroutine of its own,
// once the clock is moved to d from now or past it; a d of zero or less
// runs it at once.
func (c *Clock) AfterFunc(d time.Duration, f func()) opbus.ClockTimer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &clockTimer{c: c, at: c.now.Add(d), seq: c.seq, f: f}
	if d <= 0 {
		go f()
		return t
	}
	c.timers = append(c.timers, t)
	return t
}

// Advance moves the clock forward by d (see [Clock.Set]).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	to := c.now.Add(d)
	c.mu.Unlock()
	c.Set(to)
}

// Set moves the clock to t, if it is later than now: each timer due by t
// fires in turn, with the clock at its due time, in the order of their due
// times (and of arming, for equal ones). A fired timer's function runs on
// a goroutine of its own, as time.AfterFunc's, and Set waits for it to
// return before it moves on, so that a timer it arms, or the work it
// queues, is in place before a later time is read.
func (c *Clock) Set(t time.Time) {
	for {
		c.mu.Lock()
		var next *clockTimer
		for _, x := range c.timers {
			if !x.at.After(t) && (next == nil || x.at.Before(next.at) || (x.at.Equal(next.at) && x.seq < next.seq)) {
				next = x
			}
		}
		if next == nil {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		c.timers = slices.DeleteFunc(c.timers, func(x *clockTimer) bool { return x == next })
		if next.at.After(c.now) {
			c.now = next.at
		}
		c.mu.Unlock()
		done := make(chan struct{})
		go func() {
			defer close(done)
			next.f()
		}()
		<-done
	}
}

// Pending returns how many timers are armed and not yet fired.
func (c *Clock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}
