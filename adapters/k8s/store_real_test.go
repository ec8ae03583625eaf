package k8s_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
	"github.com/opbus/opbus/opbustest"
)

// TestStore runs the Store conformance suite on the annotation store, on
// the Pods the suite's keys name, then checks the 256 KiB limit and a
// cluster-scoped object.
func TestStore(t *testing.T) {
	if os.Getenv(kubetest.KubeconfigVar) != "" {
		t.Skipf("the suite's keys name Pods in the namespaces default and other; not run on the shared cluster of %s", kubetest.KubeconfigVar)
	}
	env := kubetest.Shared(t)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	namespaces := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	_, err := c.Resource(namespaces).Create(t.Context(), obj(t, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"other"}}`), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	// The Pods the suite's keys name, where they are valid Kubernetes names.
	pods := []opbus.Key{
		{Kind: "Pod", Namespace: "default", Name: "web"},
		{Kind: "Pod", Namespace: "default", Name: "web-2"},
		{Kind: "Pod", Namespace: "other", Name: "web"},
		{Kind: "Pod", Namespace: "default", Name: "dots.and.more"},
	}
	for _, k := range pods {
		err := c.Resource(podsGVR).Namespace(k.Namespace).Delete(t.Context(), k.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		eventually(t, "an old pod goes", func() bool {
			_, err := c.Resource(podsGVR).Namespace(k.Namespace).Get(t.Context(), k.Name, metav1.GetOptions{})
			return apierrors.IsNotFound(err)
		})
		createPod(t, c, k.Namespace, k.Name)
	}
	op := start(t, k8s.Options{
		Config: env.AdminConfig(),
		Resources: []k8s.Resource{
			{GVR: podsGVR, Namespaces: []string{"default", "other"}},
			{GVR: namespaces, FieldSelector: "metadata.name=" + ns},
		},
	}, func(*opbus.Bus) {})
	st := op.src.Store()
	eventually(t, "the store serves", func() bool {
		_, err := st.Load(t.Context(), pods[0])
		return err == nil
	})
	// The bus's first pass over each Pod reads its record, and would save
	// again one the suite wrote in an older format: let those passes end
	// before the suite writes (later passes read nothing).
	eventually(t, "the bus has dispatched every Pod", func() bool {
		return op.bus.Stats().Dispatched >= uint64(len(pods))
	})
	if err := op.bus.Wait(t.Context()); err != nil {
		t.Fatal(err)
	}

	skip := func(k opbus.Key) bool {
		for _, p := range pods {
			if p == k {
				return false
			}
		}
		return true
	}
	opbustest.TestStore(t, func(t *testing.T) opbus.Store {
		// An empty store: every record deleted.
		for _, k := range pods {
			if err := st.Delete(t.Context(), k); err != nil {
				t.Fatal(err)
			}
		}
		return st
	}, skip)

	t.Run("annotation limit", func(t *testing.T) {
		key := pods[0]
		big := bytes.Repeat([]byte("x"), k8s.MaxAnnotationBytes)
		err := st.Save(t.Context(), key, big)
		if !errors.Is(err, k8s.ErrTooLarge) {
			t.Fatalf("Save of %d bytes: got %v, want ErrTooLarge", len(big), err)
		}
		for _, want := range []string{"Pod default/web", "262144 bytes", "256 KiB"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		// Another annotation takes most of the room: a record that fits
		// alone no longer does.
		other := strings.Repeat("y", 200<<10)
		patch(t, c, podsGVR, key.Namespace, key.Name, `{"metadata":{"annotations":{"example.com/big":"`+other+`"}}}`)
		eventually(t, "the cache holds the big annotation", func() bool {
			err := st.Save(t.Context(), key, bytes.Repeat([]byte("x"), 100<<10))
			return errors.Is(err, k8s.ErrTooLarge)
		})
		if err := st.Save(t.Context(), key, []byte(`{"v":1}`)); err != nil {
			t.Errorf("a small record next to a big annotation: %v", err)
		}
	})

	t.Run("cluster-scoped", func(t *testing.T) {
		key := opbus.Key{Kind: "Namespace", Name: ns}
		rec := []byte(`{"v":1,"values":{"n":"1"}}`)
		if err := st.Save(t.Context(), key, rec); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Load(t.Context(), key); err != nil || !bytes.Equal(got, rec) {
			t.Fatalf("Load = %q, %v; want %q", got, err, rec)
		}
		if v, _ := annotationOf(get(t, c, namespaces, "", ns), k8s.AnnotationRecord); v != string(rec) {
			t.Errorf("annotation %q, want %q", v, rec)
		}
		if err := st.Delete(t.Context(), key); err != nil {
			t.Fatal(err)
		}
		if got, err := st.Load(t.Context(), key); err != nil || got != nil {
			t.Fatalf("after Delete, Load = %q, %v", got, err)
		}
	})

	t.Run("unknown kind", func(t *testing.T) {
		_, err := st.Load(t.Context(), opbus.Key{Kind: "Widget", Name: "x"})
		if err == nil || !strings.Contains(err.Error(), `no watched resource holds kind "Widget"`) {
			t.Errorf("got %v, want an error naming the kind", err)
		}
	})
}
