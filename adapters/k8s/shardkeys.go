package k8s

import (
	"sync"

	"github.com/opbus/opbus"
)

// maxGoneKeys bounds the deleted keys whose shard hash a replica keeps
// (see [shardKeys]), as the bus bounds the deletions it remembers.
const maxGoneKeys = 4096

// shardKeys holds the shard hash of each key a sharded replica has seen:
// that of every live object received, and, for a while, that of every key
// deleted. The bus asks for a key's hash after its object is gone (the
// predicates of Release and Acquire name keys by their hash, and the bus
// calls them for its delete passes), so a deleted key's hash moves aside,
// kept until the key is seen again, its bucket is released (the bus then
// forgets the key), or maxGoneKeys later deletions push it out. Memory
// thus follows the live objects, not the churn.
type shardKeys struct {
	mu   sync.Mutex
	live map[opbus.Key]uint64
	gone map[opbus.Key]uint64
	fifo []opbus.Key // gone keys, oldest first; may hold keys no longer gone
}

// note records the hash of key, whose object is live.
func (k *shardKeys) note(key opbus.Key, h uint64) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.live == nil {
		k.live = map[opbus.Key]uint64{}
	}
	k.live[key] = h
	delete(k.gone, key)
}

// lookup returns the hash of key, live or deleted.
func (k *shardKeys) lookup(key opbus.Key) (uint64, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if h, ok := k.live[key]; ok {
		return h, true
	}
	h, ok := k.gone[key]
	return h, ok
}

// deleted moves the hash of key, whose object is gone, aside.
func (k *shardKeys) deleted(key opbus.Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	h, ok := k.live[key]
	if !ok {
		return
	}
	delete(k.live, key)
	if k.gone == nil {
		k.gone = map[opbus.Key]uint64{}
	}
	k.gone[key] = h
	k.fifo = append(k.fifo, key)
	for len(k.gone) > maxGoneKeys && len(k.fifo) > 0 {
		delete(k.gone, k.fifo[0])
		k.fifo = k.fifo[1:]
	}
	if len(k.fifo) > 2*maxGoneKeys {
		k.compact()
	}
}

// released forgets the hashes in set, once the bus has released the keys
// of set's buckets: a key seen again is noted again, and one still cached
// is placed by its cached object meanwhile.
func (k *shardKeys) released(set bucketSet) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for key, h := range k.live {
		if set.hasHash(h) {
			delete(k.live, key)
		}
	}
	for key, h := range k.gone {
		if set.hasHash(h) {
			delete(k.gone, key)
		}
	}
	k.compact()
}

// compact drops from fifo the keys no longer gone; k.mu is held.
func (k *shardKeys) compact() {
	fifo := k.fifo[:0]
	for _, key := range k.fifo {
		if _, ok := k.gone[key]; ok {
			fifo = append(fifo, key)
		}
	}
	clear(k.fifo[len(fifo):])
	k.fifo = fifo
}

// count returns how many live keys hash into set, and how many keys are
// held in all (live and deleted).
func (k *shardKeys) count(set bucketSet) (in, held int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, h := range k.live {
		if set.hasHash(h) {
			in++
		}
	}
	return in, len(k.live) + len(k.gone)
}

// outside returns how many keys held (live or deleted) hash outside set.
func (k *shardKeys) outside(set bucketSet) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, m := range []map[opbus.Key]uint64{k.live, k.gone} {
		for _, h := range m {
			if !set.hasHash(h) {
				n++
			}
		}
	}
	return n
}
