package ctrlmgr

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/opbus/opbus/adapters/k8s"
)

// Manager is a controller-runtime manager made by [NewManager]: its
// leader election goes through a [k8s.LeaseLock], whose deadline fences
// the opbus Sources that [New] builds on it.
type Manager struct {
	manager.Manager
	lock *k8s.LeaseLock // nil without leader election
}

// The durations of a manager's leader election when its Options leave
// them unset (controller-runtime's defaults).
const (
	defaultLeaseDuration = 15 * time.Second
	defaultRenewDeadline = 10 * time.Second
)

// NewManager returns manager.New(cfg, opts) with opts' leader election
// (opts.LeaderElection, the --leader-elect flag of a kubebuilder main)
// made through a [k8s.LeaseLock] of the same Lease (LeaderElectionID in
// LeaderElectionNamespace, the Pod's namespace in a cluster), so that a
// Source from [New] on it is fenced by the Lease itself: before each
// handler run and each write it checks, on its own clock, that its last
// successful renew is less than RenewDeadline old, and once it is not it
// halts its bus and writes nothing more, whatever the manager's elector
// still believes (see [k8s.Options].Fence). The manager itself (its
// other controllers included) still stops only when its elector gives
// up. Call it instead of ctrl.NewManager.
//
// Only Lease locks are fenced: LeaderElectionResourceLock must be "" or
// "leases", and LeaderElectionResourceLockInterface unset. Set
// LeaderElectionReleaseOnCancel so that a clean stop hands the Lease over
// at once; the Source drains and stops before the manager releases it.
func NewManager(cfg *rest.Config, opts manager.Options) (*Manager, error) {
	if cfg == nil {
		return nil, errors.New("ctrlmgr: NewManager: the rest.Config is nil")
	}
	var lock *k8s.LeaseLock
	if opts.LeaderElection {
		var err error
		if lock, err = leaseLock(cfg, &opts); err != nil {
			return nil, err
		}
		opts.LeaderElectionResourceLockInterface = lock
	}
	mgr, err := manager.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	return &Manager{Manager: mgr, lock: lock}, nil
}

// leaseLock builds the Lease lock of opts' leader election, with the
// identity controller-runtime would give it.
func leaseLock(cfg *rest.Config, opts *manager.Options) (*k8s.LeaseLock, error) {
	switch {
	case opts.LeaderElectionResourceLockInterface != nil:
		return nil, errors.New("ctrlmgr: NewManager: Options.LeaderElectionResourceLockInterface is set: NewManager makes the Lease lock itself, to fence the Source by it; leave it nil")
	case opts.LeaderElectionResourceLock != "" && opts.LeaderElectionResourceLock != resourcelock.LeasesResourceLock:
		return nil, fmt.Errorf("ctrlmgr: NewManager: Options.LeaderElectionResourceLock is %q: only %q locks fence the Source; leave it empty", opts.LeaderElectionResourceLock, resourcelock.LeasesResourceLock)
	case opts.LeaderElectionID == "":
		return nil, errors.New("ctrlmgr: NewManager: Options.LeaderElectionID is empty: it names the Lease leader election uses")
	}
	ns := opts.LeaderElectionNamespace
	if ns == "" {
		b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
		if err != nil {
			return nil, errors.New("ctrlmgr: NewManager: Options.LeaderElectionNamespace is empty and this process runs in no Pod: name the namespace of the Lease")
		}
		ns = strings.TrimSpace(string(b))
	}
	if opts.LeaseDuration == nil {
		d := defaultLeaseDuration
		opts.LeaseDuration = &d
	}
	if opts.RenewDeadline == nil {
		d := defaultRenewDeadline
		opts.RenewDeadline = &d
	}
	if *opts.LeaseDuration <= *opts.RenewDeadline {
		return nil, fmt.Errorf("ctrlmgr: NewManager: LeaseDuration %v, RenewDeadline %v: want the lease longer than the renew deadline", *opts.LeaseDuration, *opts.RenewDeadline)
	}
	lcfg := cfg
	if opts.LeaderElectionConfig != nil {
		lcfg = opts.LeaderElectionConfig
	}
	lcfg = rest.AddUserAgent(rest.CopyConfig(lcfg), "leader-election")
	leases, err := coordinationv1client.NewForConfig(lcfg)
	if err != nil {
		return nil, fmt.Errorf("ctrlmgr: NewManager: the Leases client: %w", err)
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("ctrlmgr: NewManager: the host name, for the leader election identity: %w", err)
	}
	var b [8]byte
	_, _ = rand.Read(b[:])
	lock, err := k8s.NewLeaseLock(leases, ns, opts.LeaderElectionID, host+"_"+hex.EncodeToString(b[:]), *opts.RenewDeadline, opts.LeaderElectionLabels)
	if err != nil {
		return nil, fmt.Errorf("ctrlmgr: %w", err)
	}
	return lock, nil
}
