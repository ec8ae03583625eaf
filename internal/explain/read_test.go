package explain

import (
	"strings"
	"testing"
	"time"
)

// TestReadIsAsStrictAsTheBus: a record the bus reports as corrupt is an
// error naming the key and the fault, never a plausible report; a
// version 1 record, which the bus reads, is explained by its slots.
func TestReadIsAsStrictAsTheBus(t *testing.T) {
	key := Key{Kind: "WebApp", Namespace: "shop", Name: "x"}
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct{ data, want string }{
		{`{"v":2,"slots":{"c":{"level":"bogus","message":"x"}}}`, `slot "c": unknown status level "bogus"`},
		{`{"v":2,"digests":{"a":"not-a-digest!!"}}`, `"not-a-digest!!" is not a digest`},
		{`{"v":2,"fails":{"b":{"on":"26SFqghe5Z2PITnVfpbpeg","n":-3}}}`, `negative count -3`},
		{`{"v":2,"slots":{"c":{}}}`, `slot "c": empty status`},
		{`[]`, `not a record: expected a JSON object`},
		{`{"v":9}`, `unknown version 9`},
	} {
		_, err := Read(key, []byte(tc.data), now)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "WebApp shop/x") {
			t.Errorf("Read(%s): %v, want an error naming the key and %q", tc.data, err, tc.want)
		}
	}
	r, err := Read(key, []byte(`{"v":1,"digests":{"a":"26SFqghe5Z2PITnVfpbpeg"},"slots":{"a":{"level":"active"}},"retries":{"a":2}}`), now)
	if err != nil || r.Status == nil || r.Status.Level != "active" || !strings.Contains(strings.Join(r.Notes, " "), "version 1 record") {
		t.Fatalf("a version 1 record: %+v, %v; want its slot and a note that its digests are dropped", r, err)
	}
}
