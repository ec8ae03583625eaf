package k8s_test

import (
	"fmt"
	"net/http/httptest"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestShardKeysFollowDeletions runs a replica alone in a shard ring on the
// real API server: 30 widgets created and handled, 20 of them deleted,
// opbus_shard_keys_owned and the keys it holds as live fall back to the
// 10 left. A second replica then joins: the first releases about half
// its buckets and keeps no hash of them, live or deleted.
func TestShardKeysFollowDeletions(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	keysOwned := func() float64 {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		got, _ := scrape(t, rec.Body)
		return got[`opbus_shard_keys_owned{source="shardprune"}`]
	}
	log := newShardLog()
	run := func(id string) *operator {
		return start(t, k8s.Options{
			Config: env.AdminConfig(), Name: "shardprune", Metrics: m,
			Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}},
			Shards:    &k8s.Shards{Namespace: ns, Identity: id, LeaseDuration: 3 * time.Second, RenewPeriod: 200 * time.Millisecond},
		}, func(b *opbus.Bus) {
			must(t, b.Handle("record", log.handler(id), opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec"}}))
		})
	}
	a := run("a")
	const objects, deleted = 30, 20
	for i := range objects {
		createWidget(t, c, ns, fmt.Sprintf("w-%03d", i), `{"n":1}`)
	}
	eventually(t, "every widget's n=1 handled", func() bool { return log.lastHandled(objects, "1") })
	if got := keysOwned(); got != objects {
		t.Fatalf("opbus_shard_keys_owned with %d widgets: %v", objects, got)
	}
	for i := range deleted {
		if err := c.Resource(widgetsGVR).Namespace(ns).Delete(t.Context(), fmt.Sprintf("w-%03d", i), metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "opbus_shard_keys_owned back to the live widgets", func() bool { return keysOwned() == objects-deleted })
	if owned, held, _ := k8s.ShardKeys(a.src); owned != objects-deleted || held > objects {
		t.Errorf("after %d of %d widgets were deleted: %d live keys owned, %d held; want %d, at most %d", deleted, objects, owned, held, objects-deleted, objects)
	}

	b := run("b")
	eventually(t, "both own their buckets", func() bool {
		_, na := k8s.ShardNotOwned(a.src)
		_, nb := k8s.ShardNotOwned(b.src)
		return na+nb == 256 && na < 256 && a.src.Ready() == nil && b.src.Ready() == nil
	})
	if _, held, outside := k8s.ShardKeys(a.src); outside != 0 {
		t.Errorf("after releasing buckets to b, a holds %d hashes outside its buckets (of %d held)", outside, held)
	}
	eventually(t, "opbus_shard_keys_owned summed over both: the live widgets", func() bool { return keysOwned() == objects-deleted })
}
