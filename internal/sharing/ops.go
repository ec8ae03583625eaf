package sharing

// Ops is the list of Release and Acquire calls a bus has made, in
// order. The zero value is a list with no call: every key is owned.
type Ops[K any] struct {
	ops []op[K]
}

// op is one call: its predicate, and whether it released the keys it
// names or acquired them.
type op[K any] struct {
	keys    func(K) bool
	release bool
}

// Release adds a Release call giving up the keys that keys names.
func (o *Ops[K]) Release(keys func(K) bool) {
	o.ops = append(o.ops, op[K]{keys: keys, release: true})
}

// Acquire adds an Acquire call taking on the keys that keys names.
func (o *Ops[K]) Acquire(keys func(K) bool) {
	o.ops = append(o.ops, op[K]{keys: keys})
}

// Made reports whether a Release or Acquire call has been made.
func (o *Ops[K]) Made() bool { return len(o.ops) > 0 }

// Owns reports whether key is owned: the last call whose predicate names
// it decides, and a key no call names is owned.
func (o *Ops[K]) Owns(key K) bool {
	for i := len(o.ops) - 1; i >= 0; i-- {
		if o.ops[i].keys(key) {
			return !o.ops[i].release
		}
	}
	return true
}
