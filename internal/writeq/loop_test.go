package writeq

import (
	"sync"
	"testing"
)

// fakeOwner notes the calls a Loop makes of its Owner.
type fakeOwner struct {
	sync.Mutex
	handling bool
	locked   bool // FreeHandler found the lock held
	taken    []*job
}

func (o *fakeOwner) FreeHandler() {
	o.locked = !o.TryLock()
	if !o.locked {
		o.Unlock()
	}
	o.handling = false
}

func (o *fakeOwner) TakeIn(j *job) {
	if o.handling {
		panic("a write joined while the loop held its handler slot")
	}
	o.taken = append(o.taken, j)
}

// ToWrite joins the write in flight, having given back the handler slot,
// takes its outcome in, then takes one write slot, once, until Leave.
func TestLoopToWrite(t *testing.T) {
	var l Loop[*job, string]
	o := &fakeOwner{handling: true}
	slots := NewSlots(2)
	j := &job{}
	l.Begin(j, &j.f)
	j.f.MarkFinished()
	j.f.Close()

	l.ToWrite(o, slots)
	if l.InFlight() || len(o.taken) != 1 || o.taken[0] != j {
		t.Fatalf("after ToWrite: in flight %v, taken in %v; want the write before joined and taken in (invariant 1)", l.InFlight(), o.taken)
	}
	if o.handling || !o.locked {
		t.Errorf("handler slot held %v, freed under the lock %v; want it given back under the lock", o.handling, o.locked)
	}
	l.ToWrite(o, slots)
	if got := slots.Taken(); got != 1 {
		t.Fatalf("slots taken after two ToWrite = %d, want 1 (a loop holds at most one)", got)
	}
	l.Leave(slots)
	l.Leave(slots)
	if got := slots.Taken(); got != 0 {
		t.Fatalf("slots taken after Leave = %d, want 0", got)
	}
}

// JoinFree with no write in flight keeps the handler slot.
func TestLoopJoinFreeIdle(t *testing.T) {
	var l Loop[*job, string]
	o := &fakeOwner{handling: true}
	l.JoinFree(o)
	if !o.handling || len(o.taken) != 0 {
		t.Fatalf("handling %v, taken in %v; want the handler slot kept and nothing taken in", o.handling, o.taken)
	}
}
