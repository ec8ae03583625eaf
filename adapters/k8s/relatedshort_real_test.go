package k8s_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

var jobsGVR = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}

// TestRelatedShortKindName: a handler may name a related kind by its kind
// alone when one related resource has it: related.Job[*].status.active
// for the owned Job.batch. It runs when an owned Job's status changes,
// and reads the Jobs under the name it subscribed with (and under
// Job.batch). Before, Run refused the path ("did you mean
// related["Job.batch"]...").
func TestRelatedShortKindName(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	type seen struct{ short, full int64 }
	var mu sync.Mutex
	var got []seen
	startBus(t, k8s.Options{Config: env.AdminConfig(), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: jobsGVR, Namespaces: []string{ns}, Owned: true},
	}}, opbus.Options{}, func(b *opbus.Bus) {
		must(t, b.Handle("active", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			var s seen
			var err error
			if s.short, err = opbus.Get[int64](ev.New, "related.Job.work.status.active"); err != nil && !errors.Is(err, opbus.ErrAbsent) {
				return opbus.Status{}, err
			}
			if s.full, err = opbus.Get[int64](ev.New, `related["Job.batch"].work.status.active`); err != nil && !errors.Is(err, opbus.ErrAbsent) {
				return opbus.Status{}, err
			}
			mu.Lock()
			got = append(got, s)
			mu.Unlock()
			return opbus.Active(""), nil
		}, opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.Job[*].status.active"}}))
	})
	last := func() (seen, int) {
		mu.Lock()
		defer mu.Unlock()
		if len(got) == 0 {
			return seen{}, 0
		}
		return got[len(got)-1], len(got)
	}
	owner := createWidget(t, dynClient(t, env.AdminConfig()), ns, "owner", `{"size":1}`)
	eventually(t, "the handler's first run", func() bool { _, n := last(); return n >= 1 })

	kube := kubernetes.NewForConfigOrDie(env.AdminConfig())
	yes := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: ns, OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "test.opbus.dev/v1", Kind: "Widget", Name: owner.GetName(), UID: owner.GetUID(), Controller: &yes}}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "run", Image: "busybox"}}}}},
	}
	job, err := kube.BatchV1().Jobs(ns).Create(t.Context(), job, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.Now()
	job.Status.StartTime = &started
	job.Status.Active = 1
	if _, err := kube.BatchV1().Jobs(ns).UpdateStatus(t.Context(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a run that sees the Job's status.active under related.Job and related[\"Job.batch\"]", func() bool {
		s, _ := last()
		return s == seen{short: 1, full: 1}
	})
}

// ambiguousJobCRD is a second related kind named Job, in a group of its
// own.
const ambiguousJobCRD = `{
  "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
  "metadata": {"name": "jobs.short.test.opbus.dev"},
  "spec": {
    "group": "short.test.opbus.dev", "scope": "Namespaced",
    "names": {"kind": "Job", "plural": "jobs", "singular": "job", "listKind": "JobList"},
    "versions": [{"name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
      }}}
    }]
  }
}`

// TestRelatedShortKindNameAmbiguous: a kind alone that two related
// resources have (Job.batch and Job.short.test.opbus.dev, both Owned) is
// refused by Run, naming both, so that the handler never silently reads
// the other kind's objects.
func TestRelatedShortKindNameAmbiguous(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	env.InstallCRDs(t, obj(t, "%s", ambiguousJobCRD))
	ns := env.Namespace(t)
	src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Resources: []k8s.Resource{
		{GVR: widgetsGVR, Namespaces: []string{ns}},
		{GVR: jobsGVR, Namespaces: []string{ns}, Owned: true},
		{GVR: schema.GroupVersionResource{Group: "short.test.opbus.dev", Version: "v1", Resource: "jobs"}, Namespaces: []string{ns}, Owned: true},
	}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := opbus.New(src.BusOptions(nil))
	if err != nil {
		t.Fatal(err)
	}
	must(t, bus.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil },
		opbus.On{Kinds: []string{widgetKind}, Fields: []string{"related.Job[*].status.active"}}))
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // Run returns an error before it watches
	defer cancel()
	err = src.Run(ctx, bus)
	const want = `whose related kind "Job" is ambiguous: Job.batch and Job.short.test.opbus.dev all relate to other objects; name one with its group, such as related["Job.batch"][*].status.active`
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `handler "h"`) {
		t.Errorf("Run with a handler on related.Job[*].status.active: %v, want an error naming the handler and containing %q", err, want)
	}
}

// TestRelatedShortKindNameDotted: a related kind with its group written
// unquoted (related.Job.batch.status.active, related.Job.batch[*]...) is
// split at its dots, so that it reads as the short name Job and a Job
// named "batch", or as a field "batch" of every Job. Run refuses it and
// names the path meant, rather than follow the Job named batch or say no
// Job can have the field.
func TestRelatedShortKindNameDotted(t *testing.T) {
	t.Parallel()
	env := kubetest.Shared(t)
	ensureWidgets(t, env)
	ns := env.Namespace(t)
	for _, tc := range []struct{ field, want string }{
		{"related.Job.batch.status.active", `did you mean related["Job.batch"][*].status.active?`},
		{"related.Job.batch[*].status.active", `did you mean related["Job.batch"][*].status.active?`},
		{"related.Deployment.apps[*].status.readyReplicas", `did you mean related["Deployment.apps"][*].status.readyReplicas?`},
	} {
		t.Run(tc.field, func(t *testing.T) {
			src, err := k8s.New(&k8s.Options{Config: env.AdminConfig(), Logger: testLogger(t), Resources: []k8s.Resource{
				{GVR: widgetsGVR, Namespaces: []string{ns}},
				{GVR: jobsGVR, Namespaces: []string{ns}, Owned: true},
				{GVR: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespaces: []string{ns}, Owned: true},
			}})
			if err != nil {
				t.Fatal(err)
			}
			bus, err := opbus.New(src.BusOptions(nil))
			if err != nil {
				t.Fatal(err)
			}
			must(t, bus.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil },
				opbus.On{Kinds: []string{widgetKind}, Fields: []string{tc.field}}))
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second) // Run returns an error before it watches
			defer cancel()
			err = src.Run(ctx, bus)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `handler "h"`) {
				t.Errorf("Run with a handler on %s: %v, want an error naming the handler and containing %q", tc.field, err, tc.want)
			}
		})
	}
}
