package bench

import (
	"slices"
	"strings"
	"testing"

	"github.com/wI2L/jsondiff"
)

// TestPeersAgree checks, outside timing, that every diff peer sees a difference on pod,
// big and deep and none on pod-equal, from decoded objects and from bytes. Peers that
// cannot run on an input are listed in TestPeerLimits.
func TestPeersAgree(t *testing.T) {
	for _, f := range diffFixtures {
		in := diffInput(t, f.name)
		if got := walkCount(in.oldObj, in.newObj); (got > 0) != f.changed {
			t.Fatalf("%s: the walk finds %d differences, want changed=%v", f.name, got, f.changed)
		}
		for _, p := range diffPeers {
			if !p.runs(f.name) {
				continue
			}
			t.Run(f.name+"/"+p.name, func(t *testing.T) {
				for _, form := range []struct {
					name string
					run  func() (bool, error)
				}{
					{"decoded", func() (bool, error) { return p.decoded(in) }},
					{"bytes", func() (bool, error) { return p.bytes(in.oldJSON, in.newJSON) }},
				} {
					got, err := form.run()
					if err != nil {
						t.Errorf("from %s: %v", form.name, err)
						continue
					}
					if got != f.changed {
						t.Errorf("from %s: differs = %v, want %v", form.name, got, f.changed)
					}
				}
			})
		}
	}
}

// TestFixturesDifferInOnePlace checks that each changed fixture differs from its old
// version where the fixture generator says, and nowhere else.
func TestFixturesDifferInOnePlace(t *testing.T) {
	for _, tc := range []struct {
		fixture string
		want    int // places that differ, as walkCount counts them
	}{
		// metadata.resourceVersion, ready, state.running removed, state.terminated added.
		{"pod", 4},
		{"pod-equal", 0},
		{"big", 1},
		{"deep", 1},
	} {
		in := diffInput(t, tc.fixture)
		if got := walkCount(in.oldObj, in.newObj); got != tc.want {
			t.Errorf("%s: %d places differ, want %d", tc.fixture, got, tc.want)
		}
		if got := walkCount(in.oldF64, in.newF64); got != tc.want {
			t.Errorf("%s (float64 decoding): %d places differ, want %d", tc.fixture, got, tc.want)
		}
	}
}

// TestPeerInfo checks that the report's description of each family lists the same
// entries, in the same order, as the benchmarks run.
func TestPeerInfo(t *testing.T) {
	for _, tc := range []struct {
		family string
		info   []Peer
		names  []string
	}{
		{"diff", DiffPeers, namesOf(diffPeers, func(p diffPeer) string { return p.name })},
		{"detect", Detectors, namesOf(detectors, func(d detector) string { return d.name })},
		{"dispatch", DispatchPeers, dispatchNames},
		{"fsm", FSMPeers, namesOf(fsmEntries, func(e fsmEntry) string { return e.name })},
	} {
		got := namesOf(tc.info, func(p Peer) string { return p.Name })
		if !slices.Equal(got, tc.names) {
			t.Errorf("%s: described %v, benchmarked %v", tc.family, got, tc.names)
		}
	}
}

func namesOf[T any](l []T, name func(T) string) []string {
	var out []string
	for _, e := range l {
		out = append(out, name(e))
	}
	return out
}

// TestPeerLimits documents the inputs a peer cannot take, so that a change in a peer's
// behaviour shows up here rather than as a silently different benchmark.
func TestPeerLimits(t *testing.T) {
	t.Run("jsondiff rejects int64", func(t *testing.T) {
		// client-go decodes integers as int64; jsondiff accepts only what
		// encoding/json produces, so the benchmarks hand it the float64 decoding.
		in := diffInput(t, "pod")
		_, err := jsondiff.CompareWithoutMarshal(in.oldObj, in.newObj)
		if err == nil || !strings.Contains(err.Error(), "int64") {
			t.Errorf("got error %v, want one naming int64", err)
		}
	})
	t.Run("strategicpatch needs a Go type", func(t *testing.T) {
		// CreateTwoWayMergePatch reads list merge keys from a registered Go type; the
		// big and deep documents have none, so it runs on the Pod fixtures only.
		for _, p := range diffPeers {
			if p.name == "strategicpatch" && p.runs("big") {
				t.Error("strategicpatch is expected to run on the Pod fixtures only")
			}
		}
	})
}
