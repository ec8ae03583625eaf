package k8s

import (
	"strings"
	"testing"
	"time"
)

// TestShardsValidate: bad ring settings are refused with what was expected.
func TestShardsValidate(t *testing.T) {
	for _, tc := range []struct {
		cfg  Shards
		ring string
		want string
	}{
		{Shards{}, "webapp", "Shards.Namespace is empty"},
		{Shards{Namespace: "ops"}, "web app", `shard ring name "web app"`},
		{Shards{Namespace: "ops"}, "", `shard ring name ""`},
		{Shards{Namespace: "ops", LeaseDuration: time.Second, RenewPeriod: time.Second}, "webapp", "want lease > 2 × renew period"},
	} {
		err := tc.cfg.validate(tc.ring)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v, ring %q: error %v, want one saying %q", tc.cfg, tc.ring, err, tc.want)
		}
	}
	if err := (Shards{Namespace: "ops"}).validate("webapp"); err != nil {
		t.Errorf("defaults refused: %v", err)
	}
}
