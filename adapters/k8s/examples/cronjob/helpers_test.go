package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
	"github.com/opbus/opbus/opbustest"
)

func TestMain(m *testing.M) { kubetest.Main(m) }

// waitFor bounds each wait for the operator.
const waitFor = 30 * time.Second

// cluster is what a test of the operator works with: a namespace of its
// own, clients, and the test clock the operator's bus runs on.
type cluster struct {
	cfg   *rest.Config
	ns    string
	dyn   dynamic.Interface
	kube  kubernetes.Interface
	clock *opbustest.Clock
}

// newCluster starts from a namespace of the shared server with the CRD
// installed, and a test clock a second ahead of the time of day, so that
// a CronJob created now was created before it (createCronJob moves it
// on if not), and not at a whole minute, which a CronJob created just
// before it would count as a run missed.
func newCluster(t kubetest.TB, env *kubetest.Env) *cluster {
	t.Helper()
	env.InstallCRDFiles(t, "crd.yaml")
	cfg := env.AdminConfig()
	start := time.Now().Truncate(time.Second).Add(time.Second)
	if start.Equal(start.Truncate(time.Minute)) {
		start = start.Add(-time.Second)
	}
	return &cluster{cfg: cfg, ns: env.Namespace(t), dyn: dynamic.NewForConfigOrDie(cfg), kube: kubernetes.NewForConfigOrDie(cfg),
		clock: opbustest.NewClock(start)}
}

// running is an operator started by a test.
type running struct {
	op     *operator
	cancel context.CancelFunc
	done   chan error
}

// start runs the operator on c's namespace and clock until stop or the
// end of the test.
func (c *cluster) start(t kubetest.TB) *running {
	t.Helper()
	op, err := setup(settings{Config: c.cfg, Namespaces: []string{c.ns}, Clock: c.clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("setup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{op: op, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- op.run(ctx) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop stops the operator and waits for it; stopping it again does
// nothing.
func (r *running) stop(t kubetest.TB) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("the operator stopped with %v", err)
		}
	case <-time.After(waitFor):
		t.Errorf("the operator did not stop within %v", waitFor)
	}
}

// tick moves the test clock to the next whole minute: the next run of a
// "* * * * *" schedule.
func (c *cluster) tick() time.Time {
	next := c.clock.Now().Truncate(time.Minute).Add(time.Minute)
	c.clock.Set(next)
	return next
}

// createCronJob creates a CronJob running busybox on schedule, with the
// spec fields given besides, and moves the test clock to its creation if
// the clock is behind it.
func (c *cluster) createCronJob(t kubetest.TB, name, schedule string, spec map[string]any) {
	t.Helper()
	s := map[string]any{
		"schedule": schedule,
		"jobTemplate": map[string]any{
			"metadata": map[string]any{"labels": map[string]any{"cronjob": name}},
			"spec": map[string]any{"template": map[string]any{"spec": map[string]any{
				"restartPolicy": "Never",
				"containers":    []any{map[string]any{"name": "run", "image": "busybox", "args": []any{"date"}}},
			}}},
		},
	}
	for k, v := range spec {
		s[k] = v
	}
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "batch.example.com/v1", "kind": "CronJob",
		"metadata": map[string]any{"name": name, "namespace": c.ns},
		"spec":     s,
	}}
	got, err := c.dyn.Resource(cronjobs).Namespace(c.ns).Create(context.Background(), obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating CronJob %s: %v", name, err)
	}
	// Schedules count from the creation (as the tutorial's do): the test
	// clock is not to lag behind it, or the next tick would be before the
	// first scheduled time. (On a loaded machine the creation may come
	// seconds after newCluster set the clock.)
	c.clock.Set(got.GetCreationTimestamp().Time)
}

// patchCronJob merge-patches the CronJob's spec.
func (c *cluster) patchCronJob(t kubetest.TB, name, spec string) {
	t.Helper()
	patch := fmt.Sprintf(`{"spec":%s}`, spec)
	if _, err := c.dyn.Resource(cronjobs).Namespace(c.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatalf("patching CronJob %s with %s: %v", name, patch, err)
	}
}

// cronJob reads the CronJob.
func (c *cluster) cronJob(t kubetest.TB, name string) *unstructured.Unstructured {
	t.Helper()
	obj, err := c.dyn.Resource(cronjobs).Namespace(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading CronJob %s: %v", name, err)
	}
	return obj
}

// jobs returns the names of the namespace's Jobs, sorted.
func (c *cluster) jobs(t kubetest.TB) []string {
	t.Helper()
	list, err := c.kube.BatchV1().Jobs(c.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing Jobs: %v", err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	return names
}

// job reads a Job.
func (c *cluster) job(t kubetest.TB, name string) *batchv1.Job {
	t.Helper()
	job, err := c.kube.BatchV1().Jobs(c.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading Job %s: %v", name, err)
	}
	return job
}

// finish writes a Job's status as the Job controller does when it ends:
// succeeded (batchv1.JobComplete) or failed (batchv1.JobFailed).
func (c *cluster) finish(t kubetest.TB, name string, how batchv1.JobConditionType) {
	t.Helper()
	job := c.job(t, name)
	now := metav1.Now()
	started := metav1.NewTime(now.Add(-time.Second))
	job.Status.StartTime = &started
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: "True", Reason: reason, LastProbeTime: now, LastTransitionTime: now}
	}
	if how == batchv1.JobComplete {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached"), cond(batchv1.JobComplete, "CompletionsReached")}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, "BackoffLimitExceeded"), cond(batchv1.JobFailed, "BackoffLimitExceeded")}
	}
	if _, err := c.kube.BatchV1().Jobs(c.ns).UpdateStatus(context.Background(), job, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing Job %s's status %s: %v", name, how, err)
	}
}

// jobName is the name of the Job of cronjob's run at t.
func jobName(cronjob string, t time.Time) string { return fmt.Sprintf("%s-%d", cronjob, t.Unix()) }

// status returns the CronJob's status.active names and
// status.lastScheduleTime.
func (c *cluster) status(t kubetest.TB, name string) (active []string, last string) {
	t.Helper()
	obj := c.cronJob(t, name)
	var st struct {
		Active []struct {
			Name string `json:"name"`
		} `json:"active"`
		LastScheduleTime string `json:"lastScheduleTime"`
	}
	raw, _ := json.Marshal(obj.Object["status"])
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatalf("CronJob %s's status %s: %v", name, raw, err)
	}
	for _, a := range st.Active {
		active = append(active, a.Name)
	}
	return active, st.LastScheduleTime
}

// condition returns the CronJob's condition of type typ as
// "status reason: message", or "" if it has none.
func (c *cluster) condition(t kubetest.TB, name, typ string) string {
	t.Helper()
	conds, _, _ := unstructured.NestedSlice(c.cronJob(t, name).Object, "status", "conditions")
	for _, x := range conds {
		m, _ := x.(map[string]any)
		if m["type"] == typ {
			return fmt.Sprintf("%v %v: %v", m["status"], m["reason"], m["message"])
		}
	}
	return ""
}

// eventually polls cond until it returns "" (met) or waitFor passes; it
// then fails with cond's last word.
func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(waitFor)
	for {
		msg := cond()
		if msg == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v: %s", what, waitFor, msg)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// steady checks that the namespace's Jobs stay as they are for d.
func (c *cluster) steady(t *testing.T, what string, d time.Duration) {
	t.Helper()
	want := c.jobs(t)
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if got := c.jobs(t); !slices.Equal(got, want) {
			t.Fatalf("%s: the Jobs went from %v to %v", what, want, got)
		}
	}
}

// wantJobs returns a condition met once the namespace's Jobs are want.
func (c *cluster) wantJobs(t *testing.T, want ...string) func() string {
	slices.Sort(want)
	return func() string {
		if got := c.jobs(t); !slices.Equal(got, want) {
			return fmt.Sprintf("Jobs %v, want %v", got, want)
		}
		return ""
	}
}

// wantStatus returns a condition met once the CronJob's status.active
// holds the Jobs active and its lastScheduleTime is last.
func (c *cluster) wantStatus(t *testing.T, name string, last time.Time, active ...string) func() string {
	slices.Sort(active)
	return func() string {
		gotActive, gotLast := c.status(t, name)
		slices.Sort(gotActive)
		if !slices.Equal(gotActive, active) || gotLast != last.UTC().Format(time.RFC3339) {
			return fmt.Sprintf("status.active %v and lastScheduleTime %q, want %v and %q", gotActive, gotLast, active, last.UTC().Format(time.RFC3339))
		}
		return ""
	}
}
