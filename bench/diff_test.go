package bench

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/google/go-cmp/cmp"
	r3diff "github.com/r3labs/diff/v3"
	"github.com/wI2L/jsondiff"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/jsoncompare"
)

// A diffPeer is one library in the diff family. Each function reports whether the two
// documents differ, computed the way a caller of that library would: the library's full
// output is produced, then tested for emptiness.
type diffPeer struct {
	name string // as in DiffPeers, which says what each returns

	// only, when set, limits the peer to these fixtures (a Pod-specific peer).
	only []string

	// decoded works on already decoded objects (input.oldObj/newObj unless it says
	// otherwise).
	decoded func(in *input) (bool, error)

	// bytes starts from the compact JSON of both sides, decoding them as it must.
	bytes func(oldJSON, newJSON []byte) (bool, error)
}

// podDataStruct is the schema strategicpatch reads for a Pod. It is boxed once, outside
// the timed loop.
var podDataStruct any = corev1.Pod{}

var diffPeers = []diffPeer{
	{
		name: "opbus",
		decoded: func(in *input) (bool, error) {
			return len(opbus.Compare(in.oldObj, in.newObj)) > 0, nil
		},
		// jsoncompare compares the texts without decoding them; only the
		// values that differ are decoded, for the changes.
		bytes: func(o, n []byte) (bool, error) {
			d, err := jsoncompare.Compare(o, n)
			return len(d) > 0, err
		},
	},
	{
		name: "jsondiff",
		// jsondiff rejects int64 (it panics inside and returns "invalid json type:
		// int64"), and client-go decodes integers as int64; so it is handed the
		// encoding/json decoding of the same bytes, where every number is a float64.
		// CompareWithoutMarshal is its entry point for already decoded values; Compare
		// would marshal and unmarshal both sides first.
		decoded: func(in *input) (bool, error) {
			p, err := jsondiff.CompareWithoutMarshal(in.oldF64, in.newF64)
			return len(p) > 0, err
		},
		bytes: func(o, n []byte) (bool, error) {
			p, err := jsondiff.CompareJSON(o, n)
			return len(p) > 0, err
		},
	},
	{
		name: "go-cmp",
		decoded: func(in *input) (bool, error) {
			return cmp.Diff(in.oldObj, in.newObj) != "", nil
		},
		bytes: func(o, n []byte) (bool, error) {
			a, b, err := unmarshalBoth(o, n)
			if err != nil {
				return false, err
			}
			return cmp.Diff(a, b) != "", nil
		},
	},
	{
		name: "r3labs",
		decoded: func(in *input) (bool, error) {
			cl, err := r3diff.Diff(in.oldObj, in.newObj)
			return len(cl) > 0, err
		},
		bytes: func(o, n []byte) (bool, error) {
			a, b, err := unmarshalBoth(o, n)
			if err != nil {
				return false, err
			}
			cl, err := r3diff.Diff(a, b)
			return len(cl) > 0, err
		},
	},
	{
		name: "json-patch-merge",
		// CreateMergePatch takes bytes: from decoded objects, a caller has to marshal
		// both sides first, and that is timed.
		decoded: func(in *input) (bool, error) {
			o, n, err := marshalBoth(in.oldObj, in.newObj)
			if err != nil {
				return false, err
			}
			return mergePatchDiffers(o, n)
		},
		bytes: mergePatchDiffers,
	},
	{
		name: "strategicpatch",
		only: []string{"pod", "pod-equal"},
		// Bytes in, like CreateMergePatch, with the Pod's Go type as its schema (list
		// merge keys, patch strategies).
		decoded: func(in *input) (bool, error) {
			o, n, err := marshalBoth(in.oldObj, in.newObj)
			if err != nil {
				return false, err
			}
			return strategicPatchDiffers(o, n)
		},
		bytes: strategicPatchDiffers,
	},
	{
		name: "semantic-deepequal",
		decoded: func(in *input) (bool, error) {
			return !equality.Semantic.DeepEqual(in.oldObj, in.newObj), nil
		},
		bytes: func(o, n []byte) (bool, error) {
			a, b, err := unmarshalBoth(o, n)
			if err != nil {
				return false, err
			}
			return !equality.Semantic.DeepEqual(a, b), nil
		},
	},
	{
		name: "reflect-deepequal",
		decoded: func(in *input) (bool, error) {
			return !reflect.DeepEqual(in.oldObj, in.newObj), nil
		},
		bytes: func(o, n []byte) (bool, error) {
			a, b, err := unmarshalBoth(o, n)
			if err != nil {
				return false, err
			}
			return !reflect.DeepEqual(a, b), nil
		},
	},
	{
		name: "walk",
		decoded: func(in *input) (bool, error) {
			return walkDiffers(in.oldObj, in.newObj), nil
		},
		bytes: func(o, n []byte) (bool, error) {
			a, b, err := unmarshalBoth(o, n)
			if err != nil {
				return false, err
			}
			return walkDiffers(a, b), nil
		},
	},
}

// runs reports whether the peer runs on the named fixture.
func (p *diffPeer) runs(fixture string) bool {
	return p.only == nil || slices.Contains(p.only, fixture)
}

// unmarshalBoth decodes both sides with encoding/json, as a watch-event consumer that
// does not go through client-go would.
func unmarshalBoth(o, n []byte) (a, b any, err error) {
	if err = json.Unmarshal(o, &a); err != nil {
		return nil, nil, err
	}
	if err = json.Unmarshal(n, &b); err != nil {
		return nil, nil, err
	}
	return a, b, nil
}

func marshalBoth(a, b any) (o, n []byte, err error) {
	if o, err = json.Marshal(a); err != nil {
		return nil, nil, err
	}
	if n, err = json.Marshal(b); err != nil {
		return nil, nil, err
	}
	return o, n, nil
}

func mergePatchDiffers(o, n []byte) (bool, error) {
	p, err := jsonpatch.CreateMergePatch(o, n)
	return !bytes.Equal(p, []byte("{}")), err
}

func strategicPatchDiffers(o, n []byte) (bool, error) {
	p, err := strategicpatch.CreateTwoWayMergePatch(o, n, podDataStruct)
	return !bytes.Equal(p, []byte("{}")), err
}

// sink keeps the results alive, so that no call can be optimised away.
var sink bool

// BenchmarkDiff diffs two already decoded objects: BenchmarkDiff/<fixture>/<lib>.
func BenchmarkDiff(b *testing.B) {
	for _, f := range diffFixtures {
		b.Run(f.name, func(b *testing.B) {
			in := diffInput(b, f.name)
			for _, p := range diffPeers {
				if !p.runs(f.name) {
					continue
				}
				b.Run(p.name, func(b *testing.B) {
					checkOnce(b, p.name, in, func() (bool, error) { return p.decoded(in) })
					b.ReportAllocs()
					for b.Loop() {
						d, err := p.decoded(in)
						if err != nil {
							b.Fatal(err)
						}
						sink = d
					}
				})
			}
		})
	}
}

// BenchmarkDiffBytes diffs two JSON documents, decoding both inside the timed loop:
// BenchmarkDiffBytes/<fixture>/<lib>.
func BenchmarkDiffBytes(b *testing.B) {
	for _, f := range diffFixtures {
		b.Run(f.name, func(b *testing.B) {
			in := diffInput(b, f.name)
			for _, p := range diffPeers {
				if !p.runs(f.name) {
					continue
				}
				b.Run(p.name, func(b *testing.B) {
					checkOnce(b, p.name, in, func() (bool, error) { return p.bytes(in.oldJSON, in.newJSON) })
					b.ReportAllocs()
					for b.Loop() {
						d, err := p.bytes(in.oldJSON, in.newJSON)
						if err != nil {
							b.Fatal(err)
						}
						sink = d
					}
				})
			}
		})
	}
}

// checkOnce runs fn outside the timed loop and fails the benchmark if its answer is
// wrong, so that a table never shows a figure for a peer that missed the difference.
func checkOnce(b *testing.B, peer string, in *input, fn func() (bool, error)) {
	b.Helper()
	got, err := fn()
	if err != nil {
		b.Fatalf("%s on %s: %v", peer, in.name, err)
	}
	if got != in.changed {
		b.Fatalf("%s on %s: reports differs=%v, want %v", peer, in.name, got, in.changed)
	}
}
