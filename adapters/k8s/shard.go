package k8s

import (
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
)

// shardBuckets is how many equal buckets the 64-bit hash space is cut
// into: the unit that moves between replicas. Each replica's ranges are
// its buckets, merged where they touch. More buckets balance better but
// make longer shard selectors.
const shardBuckets = 256

// bucketWidth is the width of one bucket of the hash space.
const bucketWidth = uint64(1) << 56 // 2^64 / shardBuckets

// ShardRange is a part of the 64-bit hash space of object uids: the hashes
// from Start to Last, both included. The hash of a uid is its 64-bit FNV-1a
// hash, as the API server computes it for a shard selector's shardRange.
type ShardRange struct {
	Start, Last uint64
}

// Contains reports whether hash h lies in r.
func (r ShardRange) Contains(h uint64) bool { return h >= r.Start && h <= r.Last }

// String returns r in the shardRange form the API server's shard selector
// takes: shardRange(object.metadata.uid, '0x…', '0x…'), whose end is
// exclusive (2^64, written 0x10000000000000000, for the last range).
func (r ShardRange) String() string {
	end := fmt.Sprintf("0x%016x", r.Last+1)
	if r.Last == math.MaxUint64 {
		end = "0x10000000000000000"
	}
	return fmt.Sprintf("shardRange(object.metadata.uid, '0x%016x', '%s')", r.Start, end)
}

// shardHash returns the 64-bit FNV-1a hash of uid.
func shardHash(uid string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(uid))
	return h.Sum64()
}

// score is member's rendezvous score for bucket b: the member with the
// highest score owns the bucket. FNV-1a alone mixes the last bytes
// poorly, so the hash is finished with a 64-bit mixer (splitmix64's).
func score(member string, b int) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(member))
	_, _ = h.Write([]byte{0, byte(b >> 8), byte(b)})
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// assign returns the owner of each bucket among members: the member of
// highest rendezvous score for it, ties going to the lesser name. Every
// replica computes the same from the same members, in any order; a member
// that joins takes about 1/N of the buckets from the others, and one that
// leaves gives its buckets to the others, nothing else moving. With no
// members, no bucket has an owner ("").
func assign(members []string) [shardBuckets]string {
	var owners [shardBuckets]string
	ms := slices.Clone(members)
	slices.Sort(ms)
	ms = slices.Compact(ms)
	for b := range owners {
		var best uint64
		for i, m := range ms {
			if s := score(m, b); i == 0 || s > best {
				best, owners[b] = s, m
			}
		}
	}
	return owners
}

// rangesOf returns member's ranges in owners, merged where they touch,
// in order.
func rangesOf(owners [shardBuckets]string, member string) []ShardRange {
	var rs []ShardRange
	for b, m := range owners {
		if m != member {
			continue
		}
		start := uint64(b) * bucketWidth
		last := start + (bucketWidth - 1)
		if n := len(rs); n > 0 && rs[n-1].Last+1 == start {
			rs[n-1].Last = last
			continue
		}
		rs = append(rs, ShardRange{Start: start, Last: last})
	}
	return rs
}

// shardSelector returns the shard selector of ranges for a list or watch:
// their shardRanges joined with ||. No ranges gives "".
func shardSelector(ranges []ShardRange) string {
	parts := make([]string, len(ranges))
	for i, r := range ranges {
		parts[i] = r.String()
	}
	return strings.Join(parts, " || ")
}

// inRanges reports whether hash h lies in one of ranges.
func inRanges(ranges []ShardRange, h uint64) bool {
	for _, r := range ranges {
		if r.Contains(h) {
			return true
		}
	}
	return false
}

// shardUID returns the uid that places obj in a shard: that of its
// controller owner (the owner reference with controller: true) if it has
// one, so that an owned child goes with its parent, and its own otherwise.
// A uid missing gives "".
func shardUID(obj map[string]any) string {
	meta, _ := obj["metadata"].(map[string]any)
	refs, _ := meta["ownerReferences"].([]any)
	for _, ref := range refs {
		r, _ := ref.(map[string]any)
		if c, _ := r["controller"].(bool); c {
			if id, _ := r["uid"].(string); id != "" {
				return id
			}
		}
	}
	id, _ := meta["uid"].(string)
	return id
}

// bucketSet is a set of buckets of the hash space, bucket i holding the
// hashes from i·2^56 to (i+1)·2^56 - 1.
type bucketSet [shardBuckets / 64]uint64

func (s *bucketSet) add(b int)            { s[b/64] |= 1 << (b % 64) }
func (s bucketSet) has(b int) bool        { return s[b/64]&(1<<(b%64)) != 0 }
func (s bucketSet) hasHash(h uint64) bool { return s.has(int(h / bucketWidth)) }

func (s bucketSet) or(o bucketSet) (r bucketSet) {
	for i := range s {
		r[i] = s[i] | o[i]
	}
	return r
}

func (s bucketSet) minus(o bucketSet) (r bucketSet) {
	for i := range s {
		r[i] = s[i] &^ o[i]
	}
	return r
}

func (s bucketSet) empty() bool { return s == bucketSet{} }

// count returns how many buckets s holds.
func (s bucketSet) count() int {
	n := 0
	for b := range shardBuckets {
		if s.has(b) {
			n++
		}
	}
	return n
}

// bucketsOf returns member's buckets in owners.
func bucketsOf(owners [shardBuckets]string, member string) bucketSet {
	var s bucketSet
	for b, m := range owners {
		if m == member {
			s.add(b)
		}
	}
	return s
}

// ranges returns s as ranges of the hash space, merged where they touch.
func (s bucketSet) ranges() []ShardRange {
	var owners [shardBuckets]string
	for b := range shardBuckets {
		if s.has(b) {
			owners[b] = "x"
		}
	}
	return rangesOf(owners, "x")
}

// String returns s as 64 hex digits, bucket 0 in the lowest bit of the
// last digit: the form of [AnnotationShardHolds].
func (s bucketSet) String() string {
	return fmt.Sprintf("%016x%016x%016x%016x", s[3], s[2], s[1], s[0])
}

// parseBuckets parses what [bucketSet.String] returns.
func parseBuckets(text string) (bucketSet, error) {
	var s bucketSet
	if len(text) != 64 {
		return s, fmt.Errorf("k8s: shard buckets %q: want 64 hex digits", text)
	}
	for i := range s {
		part := text[(3-i)*16 : (4-i)*16]
		if _, err := fmt.Sscanf(part, "%016x", &s[i]); err != nil {
			return s, fmt.Errorf("k8s: shard buckets %q: want 64 hex digits: %w", text, err)
		}
	}
	return s, nil
}
