package fsm

import (
	"context"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/opbus/opbus"
)

// sameNames are objects that share a name, and one that does not.
var sameNames = []opbus.Key{
	{Kind: "Pod", Namespace: "default", Name: "web"},
	{Kind: "Pod", Namespace: "other", Name: "web"},
	{Kind: "Job", Namespace: "default", Name: "web"},
	{Kind: "Pod", Name: "web"},
	{Kind: "Pod", Namespace: "default", Name: "db"},
}

// Each object has its own looplab machine until it is forgotten, whichever
// objects share its name and in whatever order they come and go; a
// forgotten object's machine is dropped, and forgetting every object leaves
// nothing behind.
func TestInstancesByKey(t *testing.T) {
	m, err := New(benchSpec(nil))
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	live := map[opbus.Key]*instance{}
	for i := range 20000 {
		key := sameNames[r.IntN(len(sameNames))]
		if r.IntN(3) == 0 {
			m.forget(key)
			delete(live, key)
			continue
		}
		in := m.instance(key)
		if in.key != key {
			t.Fatalf("step %d: instance(%v) returned the machine of %v", i, key, in.key)
		}
		if want, ok := live[key]; ok && in != want {
			t.Fatalf("step %d: instance(%v) returned another machine than before", i, key)
		}
		for k, other := range live {
			if k != key && other == in {
				t.Fatalf("step %d: %v and %v share a machine", i, key, k)
			}
		}
		live[key] = in
	}
	for _, key := range sameNames {
		m.forget(key)
	}
	for name, sm := range map[string]*sync.Map{"byName": &m.byName, "others": &m.others} {
		sm.Range(func(k, _ any) bool {
			t.Errorf("%s still holds %v after every object was forgotten", name, k)
			return true
		})
	}
}

// Objects that share a name fire at once without meeting each other's
// transition, each one deleted and created again now and then. Run with
// -race.
func TestInstancesConcurrent(t *testing.T) {
	m, err := New(benchSpec(nil))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, key := range sameNames {
		wg.Go(func() {
			ev := &opbus.Event{Key: key}
			rec := &memRecord{values: map[string]string{}, slots: opbus.Slots{}}
			for i := range 2000 {
				if i%100 == 99 {
					m.forget(key)
				}
				res, err := m.fire(context.Background(), ev, rec, toggle[i&1])
				if err != nil {
					t.Errorf("%v: fire %d: %v", key, i, err)
					return
				}
				if want := [2]string{"b", "a"}[i&1]; res.To != want {
					t.Errorf("%v: fire %d went to %q, want %q", key, i, res.To, want)
					return
				}
			}
		})
	}
	wg.Wait()
}
