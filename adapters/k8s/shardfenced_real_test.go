package k8s_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// leaseWriteBlocker fails the writes of Leases while blocked is set: a
// replica that cannot renew its Lease, as when cut off from the server.
type leaseWriteBlocker struct {
	next    http.RoundTripper
	blocked *atomic.Bool
}

func (b leaseWriteBlocker) RoundTrip(req *http.Request) (*http.Response, error) {
	if b.blocked.Load() && req.Method != http.MethodGet && strings.Contains(req.URL.Path, "/leases") {
		return nil, errors.New("test: Lease writes blocked")
	}
	return b.next.RoundTrip(req)
}

// TestShardsNotReadyWhenFenced runs a replica alone in a shard ring on the
// real API server and stops its Lease renewals: once the renewal is older
// than LeaseDuration less a renew period it gives up every bucket and
// /readyz (Source.Ready) reports it not ready, though it owns all the
// (now empty) share it computes; when renewals pass again it takes its
// buckets back and is ready again.
func TestShardsNotReadyWhenFenced(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var blocked atomic.Bool
	cfg := rest.CopyConfig(env.AdminConfig())
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return leaseWriteBlocker{rt, &blocked} }
	log := newShardLog()
	a := start(t, k8s.Options{
		Config: cfg, Name: "shardfence",
		Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
		Shards:    &k8s.Shards{Namespace: ns, Identity: "a", LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
	}, func(b *opbus.Bus) {
		must(t, b.Handle("record", log.handler("a"), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
	})
	const objects = 5
	for i := range objects {
		createWidget(t, c, ns, fmt.Sprintf("w-%03d", i), `{"n":1}`)
	}
	eventually(t, "every widget's n=1 handled", func() bool { return log.lastHandled(objects, "1") })
	eventually(t, "ready", func() bool { return a.src.Ready() == nil })

	blocked.Store(true)
	eventually(t, "every bucket released once the Lease lapsed", func() bool {
		_, n := k8s.ShardNotOwned(a.src)
		return n == 0
	})
	time.Sleep(500 * time.Millisecond) // a few more steps of the balancer
	if err := a.src.Ready(); !errors.Is(err, k8s.ErrNotReady) {
		t.Errorf("Ready with the Lease unrenewed and nothing owned: %v, want ErrNotReady", err)
	} else {
		t.Logf("not ready: %v", err)
	}

	blocked.Store(false)
	eventually(t, "ready again once renewals pass", func() bool {
		_, n := k8s.ShardNotOwned(a.src)
		return n == 256 && a.src.Ready() == nil
	})
}
