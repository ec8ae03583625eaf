package k8s

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

func members(n int) []string {
	ms := make([]string, n)
	for i := range ms {
		ms[i] = fmt.Sprintf("webapp-%d-7f9c", i)
	}
	return ms
}

// TestShardAssignmentIsDeterministic: the owners depend on the set of
// members only, not their order or repetition, so every replica computes
// the same split.
func TestShardAssignmentIsDeterministic(t *testing.T) {
	ms := members(5)
	want := assign(ms)
	rev := slices.Clone(ms)
	slices.Reverse(rev)
	if got := assign(append(rev, ms[2])); got != want {
		t.Fatal("the assignment depends on the order of the members")
	}
	var none [shardBuckets]string
	if got := assign(nil); got != none {
		t.Fatal("no members, yet buckets have owners")
	}
	one := assign([]string{"alone"})
	rs := rangesOf(one, "alone")
	if len(rs) != 1 || rs[0].Start != 0 || rs[0].Last != math.MaxUint64 {
		t.Fatalf("one member owns %v, want the whole hash space", rs)
	}
	if got := shardSelector(rs); got != "shardRange(object.metadata.uid, '0x0000000000000000', '0x10000000000000000')" {
		t.Fatalf("selector of the whole space: %s", got)
	}
}

// TestShardAssignmentMovesOneNth: a member joining takes about 1/N of the
// buckets, all of them from the others, and one leaving gives away only
// its own.
func TestShardAssignmentMovesOneNth(t *testing.T) {
	for n := 1; n <= 8; n++ {
		ms := members(n + 1)
		before, after := assign(ms[:n]), assign(ms)
		moved := 0
		for b := range before {
			if before[b] != after[b] {
				moved++
				if after[b] != ms[n] {
					t.Fatalf("n=%d: bucket %d moved from %s to %s, not to the new member", n, b, before[b], after[b])
				}
			}
		}
		want := float64(shardBuckets) / float64(n+1)
		if f := float64(moved); f < want*0.6 || f > want*1.4 {
			t.Errorf("%d members joined by one: %d of %d buckets moved, want about %.0f", n, moved, shardBuckets, want)
		}
		// Leaving is the reverse: only the leaver's buckets move.
		for b := range after {
			if after[b] != ms[n] && before[b] != after[b] {
				t.Fatalf("n=%d: bucket %d moved though its owner stayed", n, b)
			}
		}
	}
}

// TestShardAssignmentBalances: each member owns about 1/N of the hash
// space, and the ranges of all members cover it once.
func TestShardAssignmentBalances(t *testing.T) {
	for n := 2; n <= 5; n++ {
		ms := members(n)
		owners := assign(ms)
		var covered uint64
		for _, m := range ms {
			rs := rangesOf(owners, m)
			var size uint64
			for _, r := range rs {
				size += r.Last - r.Start + 1
			}
			covered += size
			share := float64(size) / math.Exp2(64)
			if share < 0.7/float64(n) || share > 1.3/float64(n) {
				t.Errorf("%d members: %s owns %.3f of the hash space, want about %.3f", n, m, share, 1/float64(n))
			}
		}
		if covered != 0 { // 2^64 wraps to 0
			t.Errorf("%d members: the ranges cover %d hashes, not 2^64", n, covered)
		}
	}
}

// TestShardRangesMatchHashes: a uid is in exactly one member's ranges,
// and the selector's bounds are those the API server compares the hash
// with.
func TestShardRangesMatchHashes(t *testing.T) {
	ms := members(3)
	owners := assign(ms)
	for i := range 2000 {
		h := shardHash(fmt.Sprintf("0b8d6f7a-%04d-4c5e-9a1b-3f2e1d0c9b8a", i))
		n := 0
		for _, m := range ms {
			if inRanges(rangesOf(owners, m), h) {
				n++
				if owners[h/bucketWidth] != m {
					t.Fatalf("hash %x in %s's ranges, but its bucket is %s's", h, m, owners[h/bucketWidth])
				}
			}
		}
		if n != 1 {
			t.Fatalf("hash %x is in %d members' ranges", h, n)
		}
	}
	if got, want := shardHash("abc"), uint64(0xe71fa2190541574b); got != want {
		t.Fatalf("FNV-1a 64 of abc: %x, want %x", got, want)
	}
	r := ShardRange{Start: 0x4000000000000000, Last: 0x7fffffffffffffff}
	if got := r.String(); got != "shardRange(object.metadata.uid, '0x4000000000000000', '0x8000000000000000')" {
		t.Fatalf("range string %s", got)
	}
}

// TestShardUIDFollowsControllerOwner: an owned child is placed by its
// controller owner's uid, another object by its own.
func TestShardUIDFollowsControllerOwner(t *testing.T) {
	parent := map[string]any{"metadata": map[string]any{"uid": "p-1"}}
	child := map[string]any{"metadata": map[string]any{"uid": "c-1", "ownerReferences": []any{
		map[string]any{"uid": "other", "controller": false},
		map[string]any{"uid": "p-1", "controller": true},
	}}}
	orphan := map[string]any{"metadata": map[string]any{"uid": "c-2", "ownerReferences": []any{
		map[string]any{"uid": "other"},
	}}}
	if got := shardUID(parent); got != "p-1" {
		t.Fatalf("parent: %q", got)
	}
	if got := shardUID(child); got != "p-1" {
		t.Fatalf("child: %q, want its controller owner's uid", got)
	}
	if got := shardUID(orphan); got != "c-2" {
		t.Fatalf("object without a controller owner: %q, want its own uid", got)
	}
}
