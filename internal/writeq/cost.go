package writeq

import (
	"sync/atomic"
	"time"
)

// Cost is a moving average of the time writes take, over about eight
// writes; safe for concurrent use. Two writers that add at once may lose
// one update, which only delays the average.
//
// Invariant: after each Add the average moves one eighth of the way to
// the duration added (in integer nanoseconds), and it never leaves the
// range of the durations added since it was zero.
type Cost struct{ avg atomic.Int64 }

// Add takes the duration of one write into the average.
func (c *Cost) Add(took time.Duration) {
	avg := c.avg.Load()
	c.avg.Store(avg + (int64(took)-avg)/8)
}

// Average returns the moving average.
func (c *Cost) Average() time.Duration { return time.Duration(c.avg.Load()) }

// AtLeast reports whether the average is at least d: from there a write
// is worth a goroutine of its own.
func (c *Cost) AtLeast(d time.Duration) bool { return c.avg.Load() >= int64(d) }
