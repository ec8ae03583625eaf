package juju

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Juju never times a hook out, and runs a unit's hooks one at a time: a
// hook that waits for a Pebble that stopped answering (its container
// frozen, its node gone) blocks every later hook of the unit. So every
// request a [Container] makes, and every wait for a change, has a bound:
// past it the call fails with an error that names the container, the
// socket and the call, the handler fails, and Juju retries the hook.

// DefaultPebbleTimeout bounds each Pebble request and each wait for a
// change of a [Container] whose Timeout is zero. (ops bounds each request
// to 5 s, and waits for a change 30 s by default.)
const DefaultPebbleTimeout = 30 * time.Second

// PebbleTimeoutEnv is the environment variable that, when set to a Go
// duration ("10s"), replaces [DefaultPebbleTimeout] for the containers of
// [Hook.Container], unless [Options.PebbleTimeout] is set.
const PebbleTimeoutEnv = "OPBUS_PEBBLE_TIMEOUT"

// ErrPebbleTimeout is wrapped by a [Container] error when Pebble did not
// answer within the container's Timeout. errors.Is(err,
// context.DeadlineExceeded) holds for it too.
var ErrPebbleTimeout = errors.New("pebble did not answer in time")

// timeoutError is the cause of a request's context that ran out of
// time: Pebble did not answer within d.
type timeoutError struct{ d time.Duration }

func (e *timeoutError) Error() string {
	return fmt.Sprintf("pebble did not answer within %v", e.d)
}

// Is reports whether target is ErrPebbleTimeout or
// context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool {
	return target == ErrPebbleTimeout || target == context.DeadlineExceeded
}

// timeout is the bound of each request and change wait.
func (c *Container) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultPebbleTimeout
}

// bound returns ctx bounded by d, whose cause, once d has passed, is a
// *timeoutError.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, &timeoutError{d})
}

// timedOut returns the *timeoutError of bctx (made by bound) when it ran
// out of time, and err otherwise: a cancelled parent context stays
// itself.
func timedOut(bctx context.Context, err error) error {
	if dl, ok := bctx.Deadline(); ok && errors.Is(err, os.ErrDeadlineExceeded) && !time.Now().Before(dl) {
		// A connection whose deadline is bctx's (an exec's websocket)
		// may see it pass a moment before bctx does.
		<-bctx.Done()
	}
	var te *timeoutError
	if bctx.Err() != nil && errors.As(context.Cause(bctx), &te) {
		return te
	}
	return err
}

// parsePebbleTimeout reads the value of PebbleTimeoutEnv; empty is zero.
func parsePebbleTimeout(v string) (time.Duration, error) {
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("juju: %s is %s: expected a positive duration such as 10s", PebbleTimeoutEnv, strconv.Quote(v))
	}
	return d, nil
}
