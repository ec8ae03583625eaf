package writeq

import (
	"strings"
	"sync"
	"testing"
)

type job struct{ f Flight }

func TestKeyHoldsOneWriteInFlight(t *testing.T) {
	var k Key[*job, string]
	if k.InFlight() || k.Running() {
		t.Fatal("the zero Key has a write in flight")
	}
	if _, ok := k.Join(); ok {
		t.Fatal("Join of a Key with no write in flight returned one")
	}
	j := &job{}
	k.Begin(j, &j.f)
	if !k.InFlight() || !k.Running() || !j.f.Started() {
		t.Fatal("after Begin the write is not in flight and running")
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("a second Begin with a write in flight did not panic")
			}
		}()
		j2 := &job{}
		k.Begin(j2, &j2.f)
	}()
	k.Backlog.Owe()
	j.f.MarkFinished()
	if k.Running() || !k.InFlight() {
		t.Fatal("a finished write not yet joined must be in flight but not running")
	}
	j.f.Close()
	if got, ok := k.Join(); !ok || got != j {
		t.Fatalf("Join = %v, %v; want the job begun", got, ok)
	}
	if k.InFlight() || !k.Backlog.Owed() {
		t.Fatal("Join must leave no write in flight and the backlog as it was")
	}
	j3 := &job{}
	k.Begin(j3, &j3.f) // one at a time: allowed again once joined
}

func TestJoinWaitsForTheWrite(t *testing.T) {
	var k Key[*job, string]
	j := &job{}
	k.Begin(j, &j.f)
	joined := make(chan struct{})
	go func() {
		k.Join()
		close(joined)
	}()
	var mu sync.Mutex
	mu.Lock()
	j.f.MarkFinished()
	mu.Unlock()
	select {
	case <-joined:
		t.Fatal("Join returned before the write's Flight was closed")
	default:
	}
	j.f.Close()
	<-joined
}

// Exactly one of a loop (TakeOver) and the write's goroutine (Claim) gets
// a parked key, whichever comes first.
func TestParkingHandsTheKeyToOne(t *testing.T) {
	for _, loopFirst := range []bool{true, false} {
		var p Parking[string, *job, string]
		var k Key[*job, string]
		j := &job{}
		k.Begin(j, &j.f)
		k.Backlog.Pass()
		k.Backlog.Owe()
		k.Backlog.Note("busy", func(a, b string) bool { return a == b })
		p.Park("a", &k)
		if k.InFlight() || k.Backlog.Owed() {
			t.Fatal("Park left the write or the backlog with the loop")
		}
		if !p.Parked("a") || p.Len() != 1 {
			t.Fatal("the key is not parked after Park")
		}
		var taken Key[*job, string]
		j.f.MarkFinished()
		j.f.Close()
		if loopFirst {
			if !p.TakeOver("a", &taken) {
				t.Fatal("TakeOver of a parked key failed")
			}
			if _, ok := p.Claim("a", j); ok {
				t.Fatal("the write's goroutine claimed a key a loop took over")
			}
			if got, _ := taken.Join(); got != j || !taken.Backlog.Owed() {
				t.Fatal("TakeOver did not give the loop the write and its backlog")
			}
			continue
		}
		owed, ok := p.Claim("a", j)
		if !ok || !owed.Owed() || owed.Passes() != 1 {
			t.Fatalf("Claim = %+v, %v; want the parked backlog", owed, ok)
		}
		if p.TakeOver("a", &taken) || p.Parked("a") || p.Len() != 0 {
			t.Fatal("a claimed key is still parked")
		}
	}
}

func TestClaimIsTheParkedWritesOnly(t *testing.T) {
	var p Parking[string, *job, string]
	old, next := &job{}, &job{}
	p.Next("a", next, &next.f)
	if !next.f.Started() {
		t.Fatal("Next did not start the write's Flight")
	}
	if _, ok := p.Claim("a", old); ok {
		t.Fatal("a write the key is not parked on claimed it")
	}
	if _, ok := p.Claim("a", next); !ok {
		t.Fatal("the write the key is parked on could not claim it")
	}
}

func TestParkRefusesWhatBreaksInvariant1(t *testing.T) {
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s did not panic", name)
			}
		}()
		f()
	}
	var p Parking[string, *job, string]
	mustPanic("Park with no write in flight", func() { p.Park("a", &Key[*job, string]{}) })
	j := &job{}
	p.Next("a", j, &j.f)
	mustPanic("a second Park of a key", func() {
		j2 := &job{}
		p.Next("a", j2, &j2.f)
	})
	var k Key[*job, string]
	k.Begin(&job{}, &Flight{})
	mustPanic("TakeOver into a Key with a write", func() { p.TakeOver("a", &k) })
}

func TestParkingCheckReportsBrokenInvariants(t *testing.T) {
	for _, c := range []struct {
		want    string
		breakIt func(p *Parking[string, *job, string])
	}{
		{"1: b is parked with no write in flight", func(p *Parking[string, *job, string]) { p.m["b"] = Key[*job, string]{} }},
		{"2: a is parked on a write that was never started", func(p *Parking[string, *job, string]) {
			k := p.m["a"]
			k.flight = &Flight{}
			p.m["a"] = k
		}},
	} {
		var p Parking[string, *job, string]
		j := &job{}
		p.Next("a", j, &j.f)
		if err := p.Check(); err != nil {
			t.Fatalf("before breaking %q: %v", c.want, err)
		}
		c.breakIt(&p)
		if err := p.Check(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Check = %v; want an error naming %q", err, c.want)
		}
	}
}
