package ctrlmgr_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/ctrlmgr"
)

// offlineManager returns a manager that is never started, on a server that
// is never contacted.
func offlineManager(t *testing.T) manager.Manager {
	t.Helper()
	mgr, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// TestNewRefuses: what the manager provides must not be set in Options,
// and what its cache cannot honour is refused, each with an error naming
// the field and what to do.
func TestNewRefuses(t *testing.T) {
	rs := []k8s.Resource{{GVR: configMaps}}
	for _, c := range []struct {
		name string
		opts *k8s.Options
		want string
	}{
		{"nil options", nil, "Options is nil"},
		{"config", &k8s.Options{Config: &rest.Config{}, Resources: rs}, "Options.Config is set"},
		{"http client", &k8s.Options{HTTPClient: &http.Client{}, Resources: rs}, "Options.HTTPClient is set"},
		{"leader election", &k8s.Options{Resources: rs, LeaderElection: &k8s.LeaderElection{Namespace: "ns", Name: "l", RetryPeriod: time.Second}},
			"Options.LeaderElection is set"},
		{"namespaces", &k8s.Options{Resources: []k8s.Resource{{GVR: configMaps, Namespaces: []string{"a"}}}}, "cache.Options"},
		{"label selector", &k8s.Options{Resources: []k8s.Resource{{GVR: configMaps, LabelSelector: "app=x"}}}, "must be empty when Options.Informers"},
		{"no resources", &k8s.Options{}, "Options.Resources is empty"},
		{"shards", &k8s.Options{Resources: rs, Shards: &k8s.Shards{Namespace: "ns"}}, "Options.Shards is set: the manager's cache cannot list"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := ctrlmgr.New(offlineManager(t), c.opts)
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.HasPrefix(err.Error(), "ctrlmgr: ") {
				t.Errorf("got %v, want an error starting ctrlmgr: and containing %q", err, c.want)
			}
		})
	}
}

// TestAddRefusesNil: Add names what is missing.
func TestAddRefusesNil(t *testing.T) {
	mgr := offlineManager(t)
	for _, c := range []struct {
		name string
		mgr  manager.Manager
		want string
	}{
		{"manager", nil, "the manager is nil"},
		{"source", mgr, "the Source is nil"},
	} {
		if err := ctrlmgr.Add(c.mgr, nil, nil); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
		}
	}
}
