package k8s

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: le.Namespace, Name: le.Name},
		Client:     s.leases,
		LockConfig: resourcelock.ResourceLockConfig{Identity: id},
	}
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
		defer close(done)
		defer lcancel() // release the Lease: nothing runs any more

		s.log.Info("k8s: leading", "lease", lease, "identity", id)
		wctx, cancel := context.WithCancel(ctx)
		stop := context.AfterFunc(leCtx, cancel)
		err := s.lead(wctx, bus)
		stop()
		cancel()
		if leCtx.Err() != nil && ctx.Err() == nil {
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

// identity returns a name for this replica: the Source's name, the host
// name and a random suffix, so that two processes on one host differ.
func (s *Source) identity() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return s.name + "_" + host + "_" + hex.EncodeToString(b[:])
}
