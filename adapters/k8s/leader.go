package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	"github.com/opbus/opbus"
)

// ErrLeadershipLost is returned (wrapped) by [Source.Run] when the process
// could not renew its Lease in time and stopped handling, so that another
// replica could take over.
var ErrLeadershipLost = errors.New("k8s: leadership lost")

// elect campaigns for the Lease and runs lead while holding it.
//
// client-go's elector releases the Lease as soon as its context ends,
// without waiting for the work it started. So the elector runs on a
// context of its own, which is cancelled only once the watches and the
// bus have stopped: no other replica can start while this one still
// drains.
func (s *Source) elect(ctx context.Context, bus *opbus.Bus) error {
	le := s.opts.LeaderElection.withDefaults()
	id := le.Identity
	if id == "" {
		id = s.identity()
	}
	lease := le.Namespace + "/" + le.Name
	ll, err := NewLeaseLock(s.leases, le.Namespace, le.Name, id, le.RenewDeadline, nil)
	if err != nil {
		return err
	}
	lock := &watchedLock{LeaseLock: ll}
	lctx, lcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer lcancel()

	var (
		mu      sync.Mutex
		leading bool // OnStartedLeading began to lead
		over    bool // the elector has returned: never start
		result  error
		done    = make(chan struct{}) // closed when leading ends
	)
	start := func(leCtx context.Context) {
		mu.Lock()
		if over || ctx.Err() != nil {
			mu.Unlock()
			return
		}
		leading = true
		mu.Unlock()
		prev, seen := lock.previous()
		defer close(done)
		defer lcancel() // release the Lease: nothing runs any more

		if prev != "" {
			// Taken from a holder that did not release it: that replica may
			// still be handling. It halts within its renew deadline, and
			// its handlers within haltMargin.
			margin := s.takeoverMargin(le) - time.Since(seen)
			s.log.Info("k8s: lease taken over; waiting for the previous leader to stop", "lease", lease, "previous", prev, "wait", margin)
			t := time.NewTimer(margin)
			select {
			case <-t.C:
			case <-leCtx.Done():
			case <-ctx.Done():
			}
			t.Stop()
			if leCtx.Err() != nil || ctx.Err() != nil {
				if leCtx.Err() != nil && ctx.Err() == nil {
					result = fmt.Errorf("%w: lease %s, identity %s", ErrLeadershipLost, lease, id)
				}
				return
			}
		}

		s.log.Info("k8s: leading", "lease", lease, "identity", id)
		// Losing the Lease halts the bus: its handlers are cancelled at
		// once and it writes nothing more, since the objects are another
		// replica's now. It is lost at the lock's deadline (fence.go),
		// or earlier if client-go's elector gives up first.
		fctx, end := s.fenced(ctx, lock.Deadline, "Lease "+lease)
		wctx, cancel := context.WithCancelCause(fctx)
		stop := context.AfterFunc(leCtx, func() {
			s.probe.set(func(p *probeState) { p.lost = true })
			cancel(fmt.Errorf("%w: %w: lease %s, identity %s", opbus.ErrHalt, ErrLeadershipLost, lease, id))
		})
		err := s.lead(wctx, bus)
		stop()
		cancel(nil)
		end()
		if (leCtx.Err() != nil || leaseLost(context.Cause(fctx))) && ctx.Err() == nil {
			s.log.Error("k8s: leadership lost: stopped handling", "lease", lease, "identity", id)
			err = errors.Join(fmt.Errorf("%w: lease %s, identity %s", ErrLeadershipLost, lease, id), err)
		}
		result = err
	}
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration,
		RenewDeadline:   le.RenewDeadline,
		RetryPeriod:     le.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            lease,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: start,
			OnStoppedLeading: func() {},
			OnNewLeader: func(leader string) {
				if leader != id {
					s.log.Info("k8s: another replica leads", "lease", lease, "leader", leader)
				}
			},
		},
	})
	if err != nil {
		return fmt.Errorf("k8s: leader election: %w", err)
	}
	// Not leading when ctx ends: stop campaigning. Leading: start cancels
	// lctx once the work is done.
	stopWatch := context.AfterFunc(ctx, func() {
		mu.Lock()
		defer mu.Unlock()
		if !leading {
			lcancel()
		}
	})
	defer stopWatch()
	s.log.Info("k8s: campaigning", "lease", lease, "identity", id)
	elector.Run(lctx)

	mu.Lock()
	over = true
	wasLeading := leading
	mu.Unlock()
	if wasLeading {
		<-done
	}
	return result
}

// watchedLock is a Lease lock that remembers the last holder other than
// itself that it read, and when it last saw that holder's record change:
// the replica that may still be handling when this one takes the Lease.
// A released Lease (no holder) has none.
type watchedLock struct {
	*LeaseLock
	mu    sync.Mutex
	other string
	rec   resourcelock.LeaderElectionRecord
	seen  time.Time
}

func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.LeaseLock.Get(ctx)
	if err == nil && rec.HolderIdentity != l.Identity() {
		l.mu.Lock()
		if rec.HolderIdentity != l.rec.HolderIdentity || !rec.RenewTime.Equal(&l.rec.RenewTime) {
			l.seen = time.Now()
		}
		l.other, l.rec = rec.HolderIdentity, *rec
		l.mu.Unlock()
	}
	return rec, raw, err
}

// previous returns the last other holder read ("" if none, or if the
// Lease was released) and when its record last changed.
func (l *watchedLock) previous() (string, time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.other, l.seen
}

// haltMargin is how long a replica that lost its Lease may still take to
// stop once it knows: the second a halted bus gives handlers that ignore
// their cancelled context, and a second more for a write already under way
// to return (its context is cancelled too).
const haltMargin = 2 * time.Second

// takeoverMargin is how long a replica that took the Lease from a holder
// that did not release it waits before it handles: the previous holder's
// renew deadline, after which it knows it lost and halts its bus, plus
// haltMargin.
func (s *Source) takeoverMargin(le LeaderElection) time.Duration {
	return le.RenewDeadline + haltMargin
}

// identity returns a name for this replica: the Source's name, the host
// name and a random suffix, so that two processes on one host differ.
func (s *Source) identity() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return s.name + "_" + host + "_" + hex.EncodeToString(b[:])
}
