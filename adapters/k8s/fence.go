package k8s

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/opbus/opbus"
)

// fence is a leader's own check that its Lease is still its own: the
// deadline its lock gives (the start of its last successful renew plus
// the renew deadline, on its monotonic clock). Once that has passed it is
// lost for good, whatever client-go's elector still believes (its renew
// loop retries on and on after a pause of the process): no handler runs,
// no request that writes leaves the process, and the lead is halted.
//
// A Source has one while it leads under leader election (standalone, or
// with [Options].Fence inside a manager), and keeps it, lost, after the
// lead ends: a handler left running past the end writes nothing either.
type fence struct {
	deadline func() time.Time
	lose     func(err error) // halts the lead; called once

	mu     sync.Mutex
	lost   error     // why it was lost; nil while it holds
	lostAt time.Time // when it was found lost
}

// errFenced is the cause of a fence lost at its deadline.
func errFenced(deadline time.Time, what string) error {
	return fmt.Errorf("%w: %w: %s not renewed by its renew deadline (%s ago): stopped handling and writing",
		opbus.ErrHalt, ErrLeadershipLost, what, time.Since(deadline).Round(time.Millisecond))
}

// holds reports whether the fence still holds, and finds it lost once its
// deadline has passed.
func (f *fence) holds(what string) bool {
	f.mu.Lock()
	if f.lost != nil {
		f.mu.Unlock()
		return false
	}
	d := f.deadline()
	if !d.IsZero() && time.Now().Before(d) {
		f.mu.Unlock()
		return true
	}
	err := errFenced(d, what)
	if d.IsZero() {
		err = fmt.Errorf("%w: %w: %s never held", opbus.ErrHalt, ErrLeadershipLost, what)
	}
	f.lost, f.lostAt = err, time.Now()
	f.mu.Unlock()
	f.lose(err)
	return false
}

// end marks the fence lost without halting anything: the lead is over
// (a clean stop, or a loss already handled).
func (f *fence) end(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.lost == nil {
		f.lost, f.lostAt = err, time.Now()
	}
}

// reason returns why the fence was lost, nil while it holds.
func (f *fence) reason() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lost
}

// watch finds the fence lost at its deadline even when nothing else
// checks it, until ctx ends; a deadline moved by renewals is waited for
// again.
func (f *fence) watch(ctx context.Context, what string) {
	for {
		d := f.deadline()
		wait := time.Until(d)
		if d.IsZero() {
			wait = 0
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		if !f.holds(what) {
			return
		}
	}
}

// fenced returns ctx for a lead that acts on the objects only while
// deadline has not passed, and a function that ends the fence when the
// lead is over. The returned context is cancelled, with a cause wrapping
// [opbus.ErrHalt] and [ErrLeadershipLost], once the deadline has passed:
// that halts the bus. A nil deadline means no fence (no leader election).
func (s *Source) fenced(ctx context.Context, deadline func() time.Time, what string) (context.Context, func()) {
	if deadline == nil {
		return ctx, func() {}
	}
	fctx, cancel := context.WithCancelCause(ctx)
	f := &fence{deadline: deadline}
	f.lose = func(err error) {
		s.log.Error("k8s: Lease not renewed in time: stopped handling and writing", "lease", what, "err", err)
		s.probe.set(func(p *probeState) { p.lost = true })
		cancel(err)
	}
	s.fence.Store(f)
	wctx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	go f.watch(wctx, what)
	return fctx, func() {
		stopWatch()
		f.end(fmt.Errorf("%w: %w: the lead of %s is over", opbus.ErrHalt, ErrLeadershipLost, what))
		cancel(nil)
	}
}

// holds reports whether this replica may act on the objects: it runs
// without leader election, or its Lease is still its own (see fence).
func (s *Source) holds() bool {
	f := s.fence.Load()
	return f == nil || f.holds("the Lease")
}

// lostLease returns why the fence was lost, nil if it holds or there is
// none.
func (s *Source) lostLease() error {
	if f := s.fence.Load(); f != nil {
		if !f.holds("the Lease") {
			return f.reason()
		}
	}
	return nil
}

// fencedTransport refuses every request that writes (any method but GET,
// HEAD and OPTIONS) once the Source's fence is lost: the last check
// before a write leaves the process, covering the record, the status,
// claims, finalizers, Events and the handlers' Client alike. The Lease
// itself is written through another client.
type fencedTransport struct {
	s    *Source
	base http.RoundTripper
}

func (t fencedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
	default:
		if err := t.s.lostLease(); err != nil {
			if req.Body != nil {
				_ = req.Body.Close()
			}
			return nil, fmt.Errorf("k8s: %s %s refused: %w", req.Method, req.URL.Path, err)
		}
	}
	return t.base.RoundTrip(req)
}

// fencedConn is a connection of the Source's own HTTP client, which
// writes nothing once the fence is lost: a request that passed the
// transport's check just before the process was paused (SIGSTOP, a GC
// pause, a frozen node) does not go out when it resumes past its
// deadline. Bytes written before the pause were on their way then. The
// connections carry the Source's reads too; once the fence is lost the
// Source stops, so they break with it.
type fencedConn struct {
	net.Conn
	s *Source
}

func (c fencedConn) Write(b []byte) (int, error) {
	if err := c.s.lostLease(); err != nil {
		return 0, fmt.Errorf("k8s: connection closed to writes: %w", err)
	}
	return c.Conn.Write(b)
}

// fencedDial returns dial (nil: a plain net.Dialer's) with its
// connections fenced.
func (s *Source) fencedDial(dial func(ctx context.Context, network, address string) (net.Conn, error)) func(ctx context.Context, network, address string) (net.Conn, error) {
	if dial == nil {
		dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	}
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		c, err := dial(ctx, network, address)
		if err != nil {
			return nil, err
		}
		return fencedConn{Conn: c, s: s}, nil
	}
}

// fencedClient returns a copy of hc whose requests pass through the
// Source's fence.
func (s *Source) fencedClient(hc *http.Client) *http.Client {
	out := *hc
	base := hc.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = fencedTransport{s: s, base: base}
	return &out
}

// leaseLost reports whether err says the Lease was lost (the fence, or
// client-go's elector).
func leaseLost(err error) bool { return errors.Is(err, ErrLeadershipLost) }
