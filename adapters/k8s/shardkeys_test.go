package k8s

import (
	"fmt"
	"testing"

	"github.com/opbus/opbus"
)

// TestShardKeysBoundedUnderChurn checks that the shard hashes a replica
// keeps follow the live objects: a deleted key's hash stays found (the
// bus asks for it after the object is gone) until maxGoneKeys later
// deletions push it out, and a release forgets the hashes of its buckets.
func TestShardKeysBoundedUnderChurn(t *testing.T) {
	var k shardKeys
	var all bucketSet
	for b := range shardBuckets {
		all.add(b)
	}
	key := func(i int) opbus.Key {
		return opbus.Key{Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprint("cm-", i)}
	}
	const churn = 3 * maxGoneKeys
	for i := range churn {
		k.note(key(i), shardHash(fmt.Sprint("uid-", i)))
		k.deleted(key(i))
	}
	k.note(key(-1), shardHash("live"))
	if in, held := k.count(all); in != 1 || held > 1+maxGoneKeys {
		t.Errorf("after %d objects created and deleted, one live: %d live keys counted, %d held; want 1 and at most %d", churn, in, held, 1+maxGoneKeys)
	}
	if len(k.fifo) > 2*maxGoneKeys+1 {
		t.Errorf("the deletion order holds %d keys: want at most %d", len(k.fifo), 2*maxGoneKeys+1)
	}
	if _, ok := k.lookup(key(churn - 1)); !ok {
		t.Error("the hash of the key deleted last is lost: the bus could no longer place its deletion")
	}
	if _, ok := k.lookup(key(0)); ok {
		t.Error("the hash of the key deleted first is still held after maxGoneKeys later deletions")
	}
	k.released(all)
	if in, held := k.count(all); in != 0 || held != 0 || len(k.fifo) != 0 {
		t.Errorf("after every bucket was released: %d live, %d held, %d in order; want none", in, held, len(k.fifo))
	}
}
