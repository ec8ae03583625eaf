package k8s

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaseLock is a coordination.k8s.io Lease lock for client-go's leader
// election (a resourcelock.Interface) that remembers when it last
// acquired or renewed the Lease for its identity: the start of that
// request, on this process's monotonic clock. [LeaseLock.Deadline] adds
// the renew deadline to it: past that instant another replica may hold
// the Lease, whatever client-go's elector still believes, so a replica
// must act on the objects no more (see [Options].Fence).
//
// The standalone Source uses one for [Options].LeaderElection;
// a controller-runtime manager uses one through ctrlmgr.NewManager.
type LeaseLock struct {
	resourcelock.LeaseLock
	renewDeadline time.Duration

	mu   sync.Mutex
	last time.Time // start of the last successful acquire or renew; monotonic
	read string    // the holder the last Get read
}

// NewLeaseLock returns a lock of the Lease namespace/name for identity,
// through leases, whose [LeaseLock.Deadline] is renewDeadline after the
// start of its last successful acquire or renew: the RenewDeadline the
// elector that uses the lock is given. labels, if any, are set on the
// Lease.
func NewLeaseLock(leases coordinationv1client.LeasesGetter, namespace, name, identity string, renewDeadline time.Duration, labels map[string]string) (*LeaseLock, error) {
	switch {
	case leases == nil:
		return nil, errors.New("k8s: NewLeaseLock: the Leases client is nil")
	case namespace == "" || name == "":
		return nil, fmt.Errorf("k8s: NewLeaseLock: a Lease needs a namespace and a name (got %q/%q)", namespace, name)
	case identity == "":
		return nil, errors.New("k8s: NewLeaseLock: the identity is empty: name this replica, such as by its host name and a random suffix")
	case renewDeadline <= 0:
		return nil, fmt.Errorf("k8s: NewLeaseLock: renew deadline %v: want a positive duration, the elector's RenewDeadline", renewDeadline)
	}
	return &LeaseLock{
		LeaseLock: resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: namespace, Name: name},
			Client:     leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: identity},
			Labels:     labels,
		},
		renewDeadline: renewDeadline,
	}, nil
}

// Create creates the Lease, as the elector does to acquire one that does
// not exist yet, and remembers when a success for this identity began.
func (l *LeaseLock) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	begin := time.Now()
	err := l.LeaseLock.Create(ctx, ler)
	l.held(begin, ler, err)
	return err
}

// Get reads the Lease, as the elector does before it acquires, renews or
// releases it.
func (l *LeaseLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.LeaseLock.Get(ctx)
	if err == nil {
		l.mu.Lock()
		l.read = rec.HolderIdentity
		l.mu.Unlock()
	}
	return rec, raw, err
}

// Update writes the Lease, as the elector does to acquire, renew or
// release it, and remembers when a success for this identity began. It
// refuses to release a Lease that the Get just before found held by
// another replica: client-go's elector releases on its own view of who
// leads, which a leader paused past its Lease has not updated yet, and
// would free the Lease from under the new leader.
func (l *LeaseLock) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	if ler.HolderIdentity == "" {
		l.mu.Lock()
		read := l.read
		l.mu.Unlock()
		if read != l.Identity() {
			return fmt.Errorf("k8s: not releasing Lease %s: it is held by %q, not by this replica (%s)", l.Describe(), read, l.Identity())
		}
	}
	begin := time.Now()
	err := l.LeaseLock.Update(ctx, ler)
	l.held(begin, ler, err)
	return err
}

// held records a write of ler that began at begin and returned err.
func (l *LeaseLock) held(begin time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	if err != nil || ler.HolderIdentity != l.Identity() {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if begin.After(l.last) {
		l.last = begin
	}
}

// Deadline returns the instant, on this process's monotonic clock, until
// which the Lease is this replica's for sure: the start of its last
// successful acquire or renew plus the renew deadline. Another replica
// takes the Lease over no earlier than LeaseDuration after it saw that
// renewal, itself after its start. The zero time means never held.
func (l *LeaseLock) Deadline() time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.last.IsZero() {
		return time.Time{}
	}
	return l.last.Add(l.renewDeadline)
}
