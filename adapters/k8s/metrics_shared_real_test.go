package k8s_test

import (
	"context"
	"net/http/httptest"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestMetricsSharedBySources: one Metrics shared by two Sources (two
// operators of different names on the Widgets) reports opbus_leader 1
// while either handles — also after the first stopped, while the second
// still handles a new Widget — and 0 once both stopped; opbus_queue_depth
// is read from the buses that run; opbus_source_leader tells the two
// apart by their names.
func TestMetricsSharedBySources(t *testing.T) {
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	m, err := k8s.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	leader := func() float64 {
		rec := httptest.NewRecorder()
		m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		got, _ := scrape(t, rec.Body)
		return got["opbus_leader"]
	}
	var handled runs
	start := func(name string) (*k8s.Source, context.CancelFunc, chan error) {
		src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Metrics: m, Name: name,
			Resources: []k8s.Resource{{GVR: widgetsGVR, Namespaces: []string{ns}}}})
		if err != nil {
			t.Fatal(err)
		}
		bus, err := opbus.New(src.BusOptions(nil))
		if err != nil {
			t.Fatal(err)
		}
		must(t, bus.Handle(name, func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			handled.add(ev)
			return opbus.Active(""), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"spec.size"}}))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- src.Run(ctx, bus) }()
		t.Cleanup(func() { cancel(); <-done })
		return src, cancel, done
	}
	first, stopFirst, firstDone := start("first")
	second, stopSecond, secondDone := start("second")
	eventually(t, "both lead", func() bool { return first.Leading() && second.Leading() })
	if got := leader(); got != 1 {
		t.Fatalf("opbus_leader with two Sources leading: %v", got)
	}
	stopFirst()
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	firstDone <- nil
	if got := leader(); got != 1 {
		t.Errorf("opbus_leader after the first Source stopped, the second leading: %v, want 1", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	got, _ := scrape(t, rec.Body)
	for name, want := range map[string]float64{
		`opbus_source_leader{source="first"}`: 0, `opbus_source_leader{source="second"}`: 1,
		`opbus_source_queue_depth{source="first"}`: 0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s: got %v (present %v), want %v", name, v, ok, want)
		}
	}
	createWidget(t, c, ns, "w", `{"size":1}`)
	eventually(t, "the second Source handles", func() bool { return handled.count("second", "w") == 1 })
	if n := handled.count("first", "w"); n != 0 {
		t.Errorf("the stopped Source handled %d times", n)
	}
	if got := leader(); got != 1 {
		t.Errorf("opbus_leader while the second Source handles: %v, want 1", got)
	}
	stopSecond()
	err = <-secondDone
	secondDone <- err
	if got := leader(); got != 0 {
		t.Errorf("opbus_leader after both stopped: %v, want 0", got)
	}
}
