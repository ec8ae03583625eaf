package k8s

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// A Source whose configuration sets no rate limit has none of its own
// (DefaultQPS: the API server's priority and fairness protects it, and the
// bus bounds the writes in flight); one that sets a limit keeps it.
func TestDefaultNoClientRateLimit(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cfg     rest.Config
		limited bool
	}{
		{"unset", rest.Config{Host: "https://127.0.0.1:1"}, false},
		{"QPS set", rest.Config{Host: "https://127.0.0.1:1", QPS: 20, Burst: 30}, true},
		{"limiter set", rest.Config{Host: "https://127.0.0.1:1", RateLimiter: flowcontrol.NewTokenBucketRateLimiter(5, 10)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(&Options{Config: &tc.cfg, Resources: []Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}}})
			if err != nil {
				t.Fatal(err)
			}
			core, ok := s.events.(interface{ RESTClient() rest.Interface })
			if !ok {
				t.Fatalf("the Source's core client is a %T", s.events)
			}
			rc, ok := core.RESTClient().(*rest.RESTClient)
			if !ok {
				t.Fatalf("the Source's core REST client is a %T", core.RESTClient())
			}
			if got := rc.GetRateLimiter() != nil; got != tc.limited {
				t.Errorf("rate limiter present: %v, want %v", got, tc.limited)
			}
		})
	}
}
