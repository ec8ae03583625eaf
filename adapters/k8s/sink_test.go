package k8s

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"

	"github.com/opbus/opbus"
)

var widgets = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}

// fakeSource returns a Source on fake clients, watching one resource whose
// informer cache holds nothing (reads go to the fake API).
func fakeSource(t *testing.T, gvr schema.GroupVersionResource, kind string, mode StatusMode, objs ...runtime.Object) (*Source, *dynamicfake.FakeDynamicClient, *k8sfake.Clientset) {
	t.Helper()
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{gvr: kind + "List"}, objs...)
	cs := k8sfake.NewClientset()
	s := &Source{name: "opbus", names: namesFor(""), log: slog.New(slog.NewTextHandler(io.Discard, nil)), dyn: dyn, events: cs.CoreV1()}
	s.store, s.sink = &store{s: s}, &sink{s: s}
	r := &resource{gvr: gvr, kind: kind, keyKind: KindOf(schema.GroupKind{Group: gvr.Group, Kind: kind}), namespaced: true,
		mode: mode, client: dyn.Resource(gvr), informers: map[string]cache.SharedIndexInformer{}}
	s.kinds = map[string]*resource{r.keyKind: r}
	s.ours = map[string]bool{ConditionReady: true, "Size": true}
	return s, dyn, cs
}

func widget(name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": "ns", "generation": int64(4), "resourceVersion": "7"},
	}}
}

func TestPutConditionsRetriesConflicts(t *testing.T) {
	s, dyn, _ := fakeSource(t, widgets, "Widget", StatusConditions, widget("w"))
	conflicts := 2
	dyn.PrependReactor("patch", "widgets", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if conflicts > 0 {
			conflicts--
			return true, nil, apierrors.NewConflict(widgets.GroupResource(), "w", nil)
		}
		return false, nil, nil
	})
	key := opbus.Key{Kind: "Widget.example.com", Namespace: "ns", Name: "w"}
	obj := widget("w").Object
	err := s.sink.PutStatus(context.Background(), key, obj, opbus.Blocked("too big"), opbus.Slots{"size": opbus.Blocked("too big")})
	if err != nil {
		t.Fatal(err)
	}
	var gets, patches int
	for _, a := range dyn.Actions() {
		switch a.GetVerb() {
		case "get":
			gets++
		case "patch":
			patches++
			if a.GetSubresource() != "status" {
				t.Errorf("patched %q, want the status subresource", a.GetSubresource())
			}
			var p map[string]any
			if err := json.Unmarshal(a.(clienttesting.PatchAction).GetPatch(), &p); err != nil {
				t.Fatal(err)
			}
			if rv, _, _ := unstructured.NestedString(p, "metadata", "resourceVersion"); rv == "" {
				t.Errorf("patch without a resourceVersion precondition: %s", a.(clienttesting.PatchAction).GetPatch())
			}
		}
	}
	if gets != 3 || patches != 3 {
		t.Errorf("%d gets and %d patches, want 3 of each: read again after each conflict", gets, patches)
	}
	got, err := dyn.Resource(widgets).Namespace("ns").Get(context.Background(), "w", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
	if len(l) != 2 {
		t.Fatalf("conditions %v, want Ready and size", l)
	}
	ready := l[0].(map[string]any)
	if ready["type"] != "Ready" || ready["status"] != "False" || ready["reason"] != "Blocked" || ready["observedGeneration"] != int64(4) {
		t.Errorf("Ready = %v", ready)
	}

	// The same status again writes nothing.
	dyn.ClearActions()
	if err := s.sink.PutStatus(context.Background(), key, obj, opbus.Blocked("too big"), opbus.Slots{"size": opbus.Blocked("too big")}); err != nil {
		t.Fatal(err)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "patch" {
			t.Errorf("patched conditions that did not change: %v", a)
		}
	}
}

func TestPutAnnotationEmitsEvents(t *testing.T) {
	pod := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "ns", "uid": "u1"},
	}}
	s, dyn, cs := fakeSource(t, pods, "Pod", StatusAnnotation, pod)
	key := opbus.Key{Kind: "Pod", Namespace: "ns", Name: "web"}
	ctx := context.Background()
	steps := []struct {
		status opbus.Status
		event  string // reason/type, "" for none
	}{
		{opbus.Status{}, ""},
		{opbus.Blocked("container app terminated"), "Blocked/Warning"},
		{opbus.Blocked("container app terminated"), ""},
		{opbus.Active("running"), "Active/Normal"},
		{opbus.Status{}, "Unknown/Normal"},
	}
	seen := 0
	for i, st := range steps {
		if err := s.sink.PutStatus(ctx, key, pod.Object, st.status, nil); err != nil {
			t.Fatal(err)
		}
		evs, err := cs.CoreV1().Events("ns").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st.event == "" {
			if len(evs.Items) != seen {
				t.Errorf("step %d (%v): an event for no change of status", i, st.status)
			}
			continue
		}
		seen++
		if len(evs.Items) != seen {
			t.Fatalf("step %d (%v): %d events, want %d", i, st.status, len(evs.Items), seen)
		}
		var found bool
		for _, e := range evs.Items {
			if e.Reason+"/"+e.Type == st.event && e.InvolvedObject.Name == "web" && e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.UID == "u1" {
				found = true
			}
		}
		if !found {
			t.Errorf("step %d: no event %s among %v", i, st.event, evs.Items)
		}
		got, _ := dyn.Resource(pods).Namespace("ns").Get(ctx, "web", metav1.GetOptions{})
		v, ok := annotation(got.Object, AnnotationStatus)
		if st.status.IsZero() {
			if ok {
				t.Errorf("step %d: annotation %q left for no status", i, v)
			}
			continue
		}
		var shown opbus.Status
		if err := json.Unmarshal([]byte(v), &shown); err != nil || shown != st.status {
			t.Errorf("step %d: annotation %q, want %v", i, v, st.status)
		}
	}
}

func TestDeletedRemovesFinalizer(t *testing.T) {
	w := widget("w")
	w.SetFinalizers([]string{"example.com/other", Finalizer})
	s, dyn, _ := fakeSource(t, widgets, "Widget", StatusConditions, w)
	key := opbus.Key{Kind: "Widget.example.com", Namespace: "ns", Name: "w"}
	if err := s.sink.Deleted(context.Background(), key, w.Object); err != nil {
		t.Fatal(err)
	}
	got, _ := dyn.Resource(widgets).Namespace("ns").Get(context.Background(), "w", metav1.GetOptions{})
	if fs := got.GetFinalizers(); len(fs) != 1 || fs[0] != "example.com/other" {
		t.Errorf("finalizers %v, want only the other one", fs)
	}
	// Gone already: nothing to do, no error.
	if err := dyn.Resource(widgets).Namespace("ns").Delete(context.Background(), "w", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := s.sink.Deleted(context.Background(), key, w.Object); err != nil {
		t.Errorf("Deleted of a gone object: %v", err)
	}
}
