package k8s_test

import (
	"context"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// backupCRD is a custom resource that names a ConfigMap in spec.target.
var backupCRD = strings.NewReplacer("widgets", "backups", "widget", "backup", "Widget", "Backup").Replace(widgetCRD)

var (
	backupsGVR = schema.GroupVersionResource{Group: "test.opbus.dev", Version: "v1", Resource: "backups"}
	backupKind = "Backup.test.opbus.dev"
)

// TestReferencedRelated: with ConfigMaps Referenced by Backups'
// spec.target, a Backup's handler on related.ConfigMap[*].data runs when
// the ConfigMap it names changes its data, when that ConfigMap is created
// after the Backup, and when spec.target switches to another ConfigMap
// (first without the old one, then with the new one); not for a ConfigMap
// it does not name. No handler runs on ConfigMaps,
// so they are read-only: nothing is written to them.
func TestReferencedRelated(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", backupCRD))
	ns := env.Namespace(t)
	c := dynClient(t, env.AdminConfig())
	var mu sync.Mutex
	var seen []string // what each run saw: name=data.v, sorted
	start(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: backupsGVR, Namespaces: []string{ns}},
		{GVR: configMapsGVR, Namespaces: []string{ns}, Referenced: []k8s.Reference{{Kind: backupKind, Field: "spec.target"}}},
	}}, func(b *opbus.Bus) {
		must(t, b.Handle("backup", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
			rel, _ := ev.New[opbus.RelatedField].(map[string]any)
			cms, _ := rel["ConfigMap"].(map[string]any)
			var parts []string
			for _, name := range slices.Sorted(maps.Keys(cms)) {
				data, _ := cms[name].(map[string]any)["data"].(map[string]any)
				v, _ := data["v"].(string)
				parts = append(parts, name+"="+v)
			}
			mu.Lock()
			seen = append(seen, strings.Join(parts, ","))
			mu.Unlock()
			return opbus.Active(strings.Join(parts, ",")), nil
		}, opbus.On{Kinds: []string{backupKind}, Fields: []string{"related.ConfigMap[*].data"}}))
	})
	runs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	var want []string
	waitRun := func(v ...string) {
		t.Helper()
		want = append(want, v...)
		defer func() {
			if t.Failed() {
				t.Logf("runs: %q", runs())
			}
		}()
		eventually(t, "runs "+strings.Join(want, " | "), func() bool { return slices.Equal(runs(), want) })
	}
	createCM := func(name, v string) {
		t.Helper()
		if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(t.Context(), obj(t,
			`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"v":%q}}`, name, v), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	createCM("a", "1")
	if _, err := c.Resource(backupsGVR).Namespace(ns).Create(t.Context(), obj(t,
		`{"apiVersion":"test.opbus.dev/v1","kind":"Backup","metadata":{"name":"bk"},"spec":{"target":"a"}}`), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRun("a=1") // its first run sees the ConfigMap observed before it
	patch(t, c, configMapsGVR, ns, "a", `{"data":{"v":"2"}}`)
	waitRun("a=2")
	patch(t, c, backupsGVR, ns, "bk", `{"spec":{"target":"b"}}`) // b does not exist yet
	waitRun("")
	createCM("b", "1")
	waitRun("b=1")
	patch(t, c, configMapsGVR, ns, "a", `{"data":{"v":"3"}}`) // no longer named
	patch(t, c, configMapsGVR, ns, "b", `{"data":{"v":"2"}}`)
	waitRun("b=2")
	// A switch is two changes of relations, in this order: b stops
	// relating, then a starts.
	patch(t, c, backupsGVR, ns, "bk", `{"spec":{"target":"a"}}`)
	waitRun("", "a=3")
	steady(t, "runs after the last", time.Second, func() int { return len(runs()) })
	for _, name := range []string{"a", "b"} {
		if a := get(t, c, configMapsGVR, ns, name).GetAnnotations(); len(a) > 0 {
			t.Errorf("ConfigMap %s carries annotations %v: want none, it is read-only", name, a)
		}
	}
}

// TestReferencedBadInput: a Referenced kind the Source does not watch, or
// a field that is not a path of map keys, makes Run fail naming it.
func TestReferencedBadInput(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	env.InstallCRDs(t, obj(t, "%s", backupCRD))
	ns := env.Namespace(t)
	for _, tc := range []struct {
		ref  k8s.Reference
		want string
	}{
		{k8s.Reference{Kind: "Backup", Field: "spec.target"}, `names kind "Backup", which no resource of the Source holds`},
		{k8s.Reference{Kind: backupKind, Field: "spec..target"}, "Referenced field of " + backupKind},
		{k8s.Reference{Kind: backupKind, Field: "spec.targets[*]"}, "want map keys only"},
	} {
		err := runErr(t, env, []k8s.Resource{
			{GVR: backupsGVR, Namespaces: []string{ns}},
			{GVR: configMapsGVR, Namespaces: []string{ns}, Referenced: []k8s.Reference{tc.ref}},
		}, nil, func(b *opbus.Bus) {})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Referenced %+v: Run = %v, want an error containing %q", tc.ref, err, tc.want)
		}
	}
}
