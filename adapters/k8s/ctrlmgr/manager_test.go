package ctrlmgr_test

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
)

// TestNewManagerRefuses: NewManager makes the Lease lock itself, so
// options that would have the manager elect otherwise, or name no Lease,
// are refused, naming the field; without leader election it makes a
// manager whose Source is not fenced, and New refuses a Fence of the
// caller's own.
func TestNewManagerRefuses(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	short := time.Second
	for _, c := range []struct {
		name string
		opts manager.Options
		want string
	}{
		{"no config", manager.Options{}, "rest.Config is nil"},
		{"lock interface", manager.Options{LeaderElection: true, LeaderElectionID: "x", LeaderElectionNamespace: "ns",
			LeaderElectionResourceLockInterface: &k8s.LeaseLock{}}, "LeaderElectionResourceLockInterface"},
		{"configmaps", manager.Options{LeaderElection: true, LeaderElectionID: "x", LeaderElectionNamespace: "ns",
			LeaderElectionResourceLock: "configmapsleases"}, `"configmapsleases"`},
		{"no ID", manager.Options{LeaderElection: true, LeaderElectionNamespace: "ns"}, "LeaderElectionID"},
		{"lease not past renew", manager.Options{LeaderElection: true, LeaderElectionID: "x", LeaderElectionNamespace: "ns",
			LeaseDuration: &short}, "LeaseDuration 1s, RenewDeadline 10s"},
	} {
		c.opts.Metrics = metricsserver.Options{BindAddress: "0"}
		in := cfg
		if c.name == "no config" {
			in = nil
		}
		if _, err := ctrlmgr.NewManager(in, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error naming %s", c.name, err, c.want)
		}
	}
	mgr, err := ctrlmgr.NewManager(cfg, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ctrlmgr.New(mgr, &k8s.Options{Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}}, Fence: time.Now}); err == nil || !strings.Contains(err.Error(), "Options.Fence") {
		t.Errorf("New with a Fence: got %v", err)
	}
}

// TestSecondSourceInProcess: a second Source made by New in one process
// (a second manager, a manager restarted, go test -count=2) shares the
// metrics on controller-runtime's registry instead of being refused.
func TestSecondSourceInProcess(t *testing.T) {
	opts := func() *k8s.Options {
		return &k8s.Options{Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}}}}
	}
	for i := range 3 {
		if _, err := ctrlmgr.New(offlineManager(t), opts()); err != nil {
			t.Fatalf("Source %d: %v", i+1, err)
		}
	}
}
