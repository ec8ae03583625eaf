package bench

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"testing"

	gojson "github.com/goccy/go-json"
	"github.com/itchyny/gojq"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/opbus/opbus"
)

// The detect family asks, per subscription, the question a framework asks for every
// watch event: did the subscribed field (here status.containerStatuses of a Pod) change?
// Each approach is given the previous and the new object as client-go delivers them
// (*unstructured.Unstructured, integers as int64). What an approach keeps between events
// (shell-operator's checksum of the previous object) is computed before the timed loop.

// subscribed is the field every approach watches.
var subscribed = []string{"status", "containerStatuses"}

// detectFixtures pair pod-old with a later version of the Pod.
var detectFixtures = []struct {
	name, new string
}{
	// The kubelet's status write: container app terminated. The subscribed field changed.
	{"pod", "pod-new.json"},
	// The library's own bookkeeping write: only an annotation changed. The subscribed
	// field did not.
	{"pod-annotated", "pod-annotated.json"},
}

// A detector is one approach. prepare runs outside the timed loop on the old object and
// returns the per-event check that runs inside it.
type detector struct {
	name string

	// ignoresStatus marks approaches that, by design, never look at status: the
	// benchmark asserts that they report no change even when status.containerStatuses
	// changed, and the report says "misses the change".
	ignoresStatus bool

	prepare func(old *unstructured.Unstructured) (func(new *unstructured.Unstructured) bool, error)
}

var detectors = []detector{
	{
		// shell-operator with a Go filter function (filterFn): extract the subtree,
		// marshal it to JSON, MD5 it (pkg/utils/checksum.CalculateChecksumOfBytes,
		// hex-encoded), and compare with the checksum cached for the object. Its json
		// package is github.com/goccy/go-json, used here too.
		name: "shell-operator",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			prev, err := subtreeChecksum(old.Object)
			if err != nil {
				return nil, err
			}
			return func(n *unstructured.Unstructured) bool {
				sum, err := subtreeChecksum(n.Object)
				if err != nil {
					panic(err)
				}
				return sum != prev
			}, nil
		},
	},
	{
		// shell-operator with a jqFilter, its usual configuration: a compiled gojq
		// program runs on a deep copy of the object, the results are marshalled, and the
		// MD5 of that JSON is compared with the cached one.
		name: "shell-operator-jq",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			q, err := gojq.Parse(".status.containerStatuses")
			if err != nil {
				return nil, err
			}
			code, err := gojq.Compile(q)
			if err != nil {
				return nil, err
			}
			prev, err := jqChecksum(code, old.Object)
			if err != nil {
				return nil, err
			}
			return func(n *unstructured.Unstructured) bool {
				sum, err := jqChecksum(code, n.Object)
				if err != nil {
					panic(err)
				}
				return sum != prev
			}, nil
		},
	},
	{
		// controller-runtime's stock predicate. It is cheap because it compares
		// metadata.generation only, which the API server bumps on spec writes and never
		// on status writes: it ignores status, so it MISSES this very change (a
		// container terminating). That is the trade-off opbus exists to avoid.
		name:          "generation-predicate",
		ignoresStatus: true,
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			p := predicate.GenerationChangedPredicate{}
			return func(n *unstructured.Unstructured) bool {
				return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n})
			}, nil
		},
	},
	{
		// What a controller-runtime user writes to see status changes: a predicate.Funcs
		// whose UpdateFunc compares the subtree with equality.Semantic.DeepEqual.
		name: "custom-predicate",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			p := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
				a, _, _ := unstructured.NestedFieldNoCopy(e.ObjectOld.(*unstructured.Unstructured).Object, subscribed...)
				b, _, _ := unstructured.NestedFieldNoCopy(e.ObjectNew.(*unstructured.Unstructured).Object, subscribed...)
				return !equality.Semantic.DeepEqual(a, b)
			}}
			return func(n *unstructured.Unstructured) bool {
				return p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n})
			}, nil
		},
	},
	{
		// opbus today: a full Compare of the two objects, then Diff.Touches on the
		// subscribed path. One Compare serves every subscription of the object, so this
		// is an upper bound on the per-subscription cost.
		name: "opbus-compare",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			path, err := opbus.ParsePath("status.containerStatuses")
			if err != nil {
				return nil, err
			}
			return func(n *unstructured.Unstructured) bool {
				return opbus.Compare(old.Object, n.Object).Touches(path)
			}, nil
		},
	},
	{
		// opbus's real per-subscription detection, through its public entry point: a
		// bus with one handler subscribed to status.containerStatuses, given each
		// state by bus.Dispatch. Per dispatch the bus diffs against the state it
		// dispatched before, skips the handler if the diff does not touch its field,
		// else digests the field and compares with the digest committed at the
		// handler's last success; when they differ it runs the (empty) handler and
		// commits the new digest to its record in the in-memory store. The digest
		// functions themselves are unexported, so this measures them together with
		// the rest of a dispatch. It reports a change when the handler ran.
		//
		// The bus keeps what it last dispatched, so the timed checks alternate
		// between the new and the old object: every dispatch is the same change,
		// one way or the other.
		name: "opbus-bus-dispatch",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			bus, err := opbus.New(&opbus.Options{ListKeys: k8sListKeys})
			if err != nil {
				return nil, err
			}
			ran := false
			err = bus.Handle("containers", func(context.Context, *opbus.Event) (opbus.Status, error) {
				ran = true
				return opbus.Status{}, nil
			}, opbus.On{Fields: []string{"status.containerStatuses"}})
			if err != nil {
				return nil, err
			}
			ctx := context.Background()
			key := opbus.Key{Kind: "Pod", Namespace: "shop", Name: "web"}
			// The old object is the bus's first sight of the Pod: a create.
			if err := bus.Dispatch(ctx, key, old.Object); err != nil {
				return nil, err
			}
			back := false // whether the next dispatch goes back to old
			return func(n *unstructured.Unstructured) bool {
				obj := n.Object
				if back {
					obj = old.Object
				}
				back = !back
				ran = false
				if err := bus.Dispatch(ctx, key, obj); err != nil {
					panic(err)
				}
				return ran
			}, nil
		},
	},
	{
		// The floor: look up the subscribed subtree on both sides and walk it.
		name: "walk",
		prepare: func(old *unstructured.Unstructured) (func(*unstructured.Unstructured) bool, error) {
			return func(n *unstructured.Unstructured) bool {
				a, _, _ := unstructured.NestedFieldNoCopy(old.Object, subscribed...)
				b, _, _ := unstructured.NestedFieldNoCopy(n.Object, subscribed...)
				return walkDiffers(a, b)
			}, nil
		},
	},
}

// subtreeChecksum is shell-operator's checksum of a filter result: MD5 of its JSON, hex.
func subtreeChecksum(obj map[string]any) (string, error) {
	v, _, err := unstructured.NestedFieldNoCopy(obj, subscribed...)
	if err != nil {
		return "", err
	}
	b, err := gojson.Marshal(v)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

// jqChecksum runs a compiled jq program the way shell-operator does (on a deep copy of the
// object, results collected and marshalled) and returns the MD5 of the result, hex.
func jqChecksum(code *gojq.Code, obj map[string]any) (string, error) {
	iter := code.RunWithContext(context.Background(), deepCopyJSON(obj))
	var results []any
	for {
		v, ok := iter.Next()
		if !ok {
			break
		}
		if err, ok := v.(error); ok {
			return "", err
		}
		results = append(results, v)
	}
	var out any
	switch len(results) {
	case 0:
	case 1:
		out = results[0]
	default:
		out = results
	}
	b, err := gojson.Marshal(out)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

// deepCopyJSON copies a decoded JSON value: shell-operator copies the object before
// handing it to gojq, which may not be given values that others hold.
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = deepCopyJSON(e)
		}
		return m
	case []any:
		l := make([]any, len(v))
		for i, e := range v {
			l[i] = deepCopyJSON(e)
		}
		return l
	default:
		return v
	}
}

// detectInput returns pod-old and the named later version as unstructured objects, and
// whether the subscribed field really differs between them (decided by the floor walk).
func detectInput(tb testing.TB, name, newFile string) (old, new *unstructured.Unstructured, changed bool) {
	tb.Helper()
	in := loadInput(tb, "detect/"+name, "pod-old.json", newFile, true)
	old = &unstructured.Unstructured{Object: in.oldObj.(map[string]any)}
	new = &unstructured.Unstructured{Object: in.newObj.(map[string]any)}
	a, _, _ := unstructured.NestedFieldNoCopy(old.Object, subscribed...)
	b, _, _ := unstructured.NestedFieldNoCopy(new.Object, subscribed...)
	return old, new, walkDiffers(a, b)
}

// detectOnce runs the detector once, outside timing, and checks what it reports against
// the truth: an approach that ignores status must report nothing; any other must report
// exactly the real change.
func detectOnce(tb testing.TB, d *detector, fixture string, old, new *unstructured.Unstructured, changed bool) (check func(*unstructured.Unstructured) bool, reports bool) {
	tb.Helper()
	check, err := d.prepare(old)
	if err != nil {
		tb.Fatalf("%s: %v", d.name, err)
	}
	reports = check(new)
	want := changed
	if d.ignoresStatus {
		want = false
	}
	if reports != want {
		tb.Fatalf("%s on %s: reports change=%v, want %v (real change: %v)", d.name, fixture, reports, want, changed)
	}
	return check, reports
}

// BenchmarkDetect: BenchmarkDetect/<fixture>/<approach>. Besides the usual units each
// result carries two metrics for the report: reports-change (1 if the approach says the
// subscribed field changed) and real-change (1 if it did).
func BenchmarkDetect(b *testing.B) {
	for _, f := range detectFixtures {
		b.Run(f.name, func(b *testing.B) {
			old, new, changed := detectInput(b, f.name, f.new)
			for i := range detectors {
				d := &detectors[i]
				b.Run(d.name, func(b *testing.B) {
					check, reports := detectOnce(b, d, f.name, old, new, changed)
					b.ReportAllocs()
					for b.Loop() {
						sink = check(new)
					}
					b.ReportMetric(float64(boolInt(reports)), "reports-change")
					b.ReportMetric(float64(boolInt(changed)), "real-change")
				})
			}
		})
	}
}

// TestDetectors checks every approach against the truth on both fixtures, outside
// timing, and shows what each reports.
func TestDetectors(t *testing.T) {
	for _, f := range detectFixtures {
		old, new, changed := detectInput(t, f.name, f.new)
		want := map[string]bool{"pod": true, "pod-annotated": false}[f.name]
		if changed != want {
			t.Fatalf("%s: subscribed field changed=%v, want %v: the fixtures are not what this test expects", f.name, changed, want)
		}
		for i := range detectors {
			d := &detectors[i]
			t.Run(fmt.Sprintf("%s/%s", f.name, d.name), func(t *testing.T) {
				check, reports := detectOnce(t, d, f.name, old, new, changed)
				t.Logf("reports change: %v (real change: %v)", reports, changed)
				// The timed loop calls check again and again; an approach that keeps
				// state between events (opbus's bus) must keep answering the same.
				for i := range 4 {
					if got := check(new); got != reports {
						t.Errorf("check %d: reports change=%v, then %v", i+2, reports, got)
					}
				}
			})
		}
	}
}
