package fsm

import (
	"context"
	"sync"
	"testing"

	"github.com/opbus/opbus"
)

// Objects that share a name but not a kind or namespace have machines of
// their own: firing them at once from many goroutines is never "in
// transition", each keeps its own state, and forgetting one leaves the
// others' machines in place.
func TestInstancesByName(t *testing.T) {
	m, err := New(benchSpec(nil))
	if err != nil {
		t.Fatal(err)
	}
	keys := []opbus.Key{
		{Kind: "Pod", Namespace: "default", Name: "web"},
		{Kind: "Pod", Namespace: "other", Name: "web"},
		{Kind: "Service", Namespace: "default", Name: "web"},
		{Kind: "Pod", Name: "web"},
		{Kind: "Pod", Namespace: "default", Name: "db"},
	}
	recs := make([]*memRecord, len(keys))
	var wg sync.WaitGroup
	for i, key := range keys {
		recs[i] = &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
		// Key i makes 2i+1 transitions: it ends in b.
		wg.Go(func() {
			ev := &opbus.Event{Key: key}
			for n := range 2*i + 1 {
				if _, err := m.fire(context.Background(), ev, recs[i], toggle[n&1]); err != nil {
					t.Errorf("%v, transition %d: %v", key, n, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for i, key := range keys {
		if got := recs[i].values[m.value]; got != "b" {
			t.Errorf("%v: state %q, want b", key, got)
		}
	}
	before := make([]*instance, len(keys))
	for i, key := range keys {
		before[i] = m.instance(key)
		if before[i].key != key {
			t.Errorf("instance(%v) is the machine of %v", key, before[i].key)
		}
	}
	m.forget(keys[1])
	m.forget(keys[1]) // twice: nothing left to forget
	for i, key := range keys {
		if i == 1 {
			if m.instance(key) == before[1] {
				t.Errorf("%v: forgotten, but its machine is still found", key)
			}
			continue
		}
		if m.instance(key) != before[i] {
			t.Errorf("%v: its machine changed when %v was forgotten", key, keys[1])
		}
	}
	for _, key := range keys {
		m.forget(key)
	}
	n := 0
	m.instances.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d names still indexed after every object was forgotten", n)
	}
}
