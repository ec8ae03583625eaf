package opbus

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"
)

// faultStore wraps the store of a simulation: the operations of a sequence
// tell it to fail a key's next loads, saves or deletes (transient
// failures), or to hand back a corrupt record for its next loads, after
// which the record reads well again (it is "repaired").
type faultStore struct {
	inner interface {
		Store
		Lister
	}
	// slow makes each Save take a while of the bubble's clock, so that
	// the operations that follow arrive while it writes (rule 22c).
	slow    bool
	mu      sync.Mutex
	quiet   bool           // no faults: while a bus shuts down, and while the harness checks
	pending map[string]int // key name + "/" + load|save|delete|corrupt → calls left to spoil
	onFault func(name string)
}

var (
	_ Store  = (*faultStore)(nil)
	_ Lister = (*faultStore)(nil)
)

var errStoreFault = errors.New("simulated store failure")

func (s *faultStore) arm(name, what string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.pending == nil {
		s.pending = map[string]int{}
	}
	s.pending[name+"/"+what] += n
}

func (s *faultStore) setQuiet(q bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quiet = q
}

// spoil reports whether this call of what on key fails.
func (s *faultStore) spoil(key Key, what string) bool {
	s.mu.Lock()
	id := key.Name + "/" + what
	hit := !s.quiet && s.pending[id] > 0
	if hit {
		s.pending[id]--
	}
	s.mu.Unlock()
	if hit && s.onFault != nil {
		s.onFault(key.Name)
	}
	return hit
}

func (s *faultStore) Load(ctx context.Context, key Key) ([]byte, error) {
	if s.spoil(key, "load") {
		return nil, errStoreFault
	}
	if s.spoil(key, "corrupt") {
		return []byte(`{"v":1,"digests":{"spec":"not a digest"}`), nil
	}
	return s.inner.Load(ctx, key)
}

func (s *faultStore) Save(ctx context.Context, key Key, data []byte) error {
	if s.spoil(key, "save") {
		return errStoreFault
	}
	runtime.Gosched() // let other passes run while this one writes (rule 22a)
	if s.slow {
		// 1 to 24 ms, varied by the record so that writes of several
		// keys end in changing orders.
		time.Sleep(time.Duration(1+len(data)%24) * time.Millisecond)
	}
	return s.inner.Save(ctx, key, data)
}

func (s *faultStore) Delete(ctx context.Context, key Key) error {
	if s.spoil(key, "delete") {
		return errStoreFault
	}
	return s.inner.Delete(ctx, key)
}

func (s *faultStore) Keys(ctx context.Context) ([]Key, error) { return s.inner.Keys(ctx) }
