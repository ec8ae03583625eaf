package main

import (
	"context"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus/adapters/k8s/kubetest"
)

// TestJobPerScheduledTime: on a test clock, a "* * * * *" CronJob gets a
// Job per minute, each controlled by it and annotated with its time; the
// running ones are in status.active, the last time in
// status.lastScheduleTime, and a finished one leaves status.active.
func TestJobPerScheduledTime(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "every", "* * * * *", nil)
	eventually(t, "the Schedule condition names the next run", func() string {
		if cond := c.condition(t, "every", "Schedule"); !strings.HasPrefix(cond, "True") || !strings.Contains(cond, "next run at") {
			return "Schedule " + cond
		}
		return ""
	})
	if jobs := c.jobs(t); len(jobs) != 0 {
		t.Fatalf("Jobs %v before the first scheduled time, want none", jobs)
	}
	var names []string
	var last time.Time
	for range 3 {
		last = c.tick()
		names = append(names, jobName("every", last))
		eventually(t, "a Job for each scheduled time", c.wantJobs(t, names...))
		eventually(t, "status.active and lastScheduleTime", c.wantStatus(t, "every", last, names...))
	}
	job := c.job(t, names[0])
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CronJob" || ref.Name != "every" {
		t.Errorf("Job %s's controller is %+v, want the CronJob every", job.Name, ref)
	}
	if at := job.Annotations[scheduledAt]; at == "" || !strings.HasPrefix(names[0], "every-") {
		t.Errorf("Job %s's %s annotation is %q", job.Name, scheduledAt, at)
	}
	if job.Labels["cronjob"] != "every" {
		t.Errorf("Job %s's labels are %v, want the template's cronjob: every", job.Name, job.Labels)
	}
	c.finish(t, names[0], batchv1.JobComplete)
	eventually(t, "a finished Job leaves status.active", c.wantStatus(t, "every", last, names[1:]...))
	eventually(t, "the Jobs condition counts it", func() string {
		if cond := c.condition(t, "every", "Jobs"); !strings.Contains(cond, "2 active, 1 succeeded, 0 failed") {
			return "Jobs " + cond
		}
		return ""
	})
}

// TestConcurrencyForbid: with concurrencyPolicy Forbid, a run while the
// last Job is active does not start; it starts once that Job finishes
// (no startingDeadlineSeconds: it is still in time).
func TestConcurrencyForbid(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "forbid", "* * * * *", map[string]any{"concurrencyPolicy": "Forbid"})
	first := c.tick()
	eventually(t, "the first run", c.wantJobs(t, jobName("forbid", first)))
	// Seen by the operator (its informer), as it would be a minute later.
	eventually(t, "the first Job active", c.wantStatus(t, "forbid", first, jobName("forbid", first)))
	second := c.tick()
	eventually(t, "the Schedule condition says the run waits", func() string {
		if cond := c.condition(t, "forbid", "Schedule"); !strings.Contains(cond, "ConcurrencyForbidden") {
			return "Schedule " + cond
		}
		return ""
	})
	c.steady(t, "no second Job while the first is active", time.Second)
	c.finish(t, jobName("forbid", first), batchv1.JobComplete)
	eventually(t, "the held run starts once the active Job is done", c.wantJobs(t, jobName("forbid", first), jobName("forbid", second)))
	eventually(t, "status", c.wantStatus(t, "forbid", second, jobName("forbid", second)))
}

// TestConcurrencyReplace: with concurrencyPolicy Replace, a run deletes
// the active Job and starts its own.
func TestConcurrencyReplace(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "replace", "* * * * *", map[string]any{"concurrencyPolicy": "Replace"})
	first := c.tick()
	eventually(t, "the first run", c.wantJobs(t, jobName("replace", first)))
	eventually(t, "the first Job active", c.wantStatus(t, "replace", first, jobName("replace", first)))
	second := c.tick()
	eventually(t, "the second run replaces the first", c.wantJobs(t, jobName("replace", second)))
	eventually(t, "status", c.wantStatus(t, "replace", second, jobName("replace", second)))
}

// TestSuspend: a suspended CronJob starts no Job and says so in its
// Schedule condition; resumed, it starts the latest run it missed, once.
func TestSuspend(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "paused", "* * * * *", map[string]any{"suspend": true})
	eventually(t, "the Schedule condition says suspended", func() string {
		if cond := c.condition(t, "paused", "Schedule"); !strings.HasPrefix(cond, "False Suspended") {
			return "Schedule " + cond
		}
		return ""
	})
	c.tick()
	last := c.tick()
	c.steady(t, "no Job while suspended", time.Second)
	if jobs := c.jobs(t); len(jobs) != 0 {
		t.Fatalf("Jobs %v while suspended, want none", jobs)
	}
	c.patchCronJob(t, "paused", `{"suspend":false}`)
	eventually(t, "resumed, the latest missed run starts", c.wantJobs(t, jobName("paused", last)))
	c.steady(t, "and only that one", time.Second)
}

// TestStartingDeadline: a run found later than startingDeadlineSeconds
// after its time does not start; the next one in time does.
func TestStartingDeadline(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "late", "* * * * *", map[string]any{"startingDeadlineSeconds": 10, "suspend": true})
	eventually(t, "suspended", func() string {
		if cond := c.condition(t, "late", "Schedule"); !strings.HasPrefix(cond, "False Suspended") {
			return "Schedule " + cond
		}
		return ""
	})
	missed := c.tick()
	c.clock.Set(missed.Add(30 * time.Second)) // 30 s late: past the deadline
	c.patchCronJob(t, "late", `{"suspend":false}`)
	eventually(t, "the Schedule condition names the next run", func() string {
		if cond := c.condition(t, "late", "Schedule"); !strings.HasPrefix(cond, "True") {
			return "Schedule " + cond
		}
		return ""
	})
	c.steady(t, "no Job for a run past its deadline", time.Second)
	if jobs := c.jobs(t); len(jobs) != 0 {
		t.Fatalf("Jobs %v for a run past its deadline, want none", jobs)
	}
	next := c.tick()
	eventually(t, "the next run in time", c.wantJobs(t, jobName("late", next)))
}

// TestHistoryLimits: finished Jobs beyond successfulJobsHistoryLimit and
// failedJobsHistoryLimit are deleted, oldest first; active ones stay.
func TestHistoryLimits(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "hist", "* * * * *", map[string]any{"successfulJobsHistoryLimit": 1, "failedJobsHistoryLimit": 1})
	var names []string
	for range 4 {
		at := c.tick()
		names = append(names, jobName("hist", at))
		eventually(t, "a Job per run", c.wantJobs(t, names...))
	}
	c.finish(t, names[0], batchv1.JobComplete)
	c.finish(t, names[1], batchv1.JobComplete)
	eventually(t, "one succeeded Job kept: the older goes", c.wantJobs(t, names[1], names[2], names[3]))
	c.finish(t, names[2], batchv1.JobFailed)
	c.finish(t, names[3], batchv1.JobFailed)
	eventually(t, "one failed Job kept: the older goes", c.wantJobs(t, names[1], names[3]))
}

// TestPrunedJobNotCreatedAgain: a Job the history limit deleted is not
// created again for its scheduled time (the kubebuilder tutorial's
// controller works out the last run from the Jobs that remain, and so
// runs it again); the last run is a value stored with the CronJob's
// record.
func TestPrunedJobNotCreatedAgain(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "keepnone", "* * * * *", map[string]any{"successfulJobsHistoryLimit": 0})
	at := c.tick()
	eventually(t, "the run", c.wantJobs(t, jobName("keepnone", at)))
	c.finish(t, jobName("keepnone", at), batchv1.JobComplete)
	eventually(t, "the succeeded Job is deleted", c.wantJobs(t))
	eventually(t, "status", c.wantStatus(t, "keepnone", at))
	c.steady(t, "no Job created again for the same time", 2*time.Second)
}

// TestRestartKeepsSchedule: an operator stopped mid-schedule and started
// again keeps the schedule from the record: a run due while it was down
// starts at once when it is back (once, not once per missed minute), the
// next one on time, and no run is repeated.
func TestRestartKeepsSchedule(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	op := c.start(t)
	c.createCronJob(t, "restart", "* * * * *", nil)
	first := c.tick()
	eventually(t, "the first run", c.wantJobs(t, jobName("restart", first)))
	eventually(t, "status", c.wantStatus(t, "restart", first, jobName("restart", first)))
	op.stop(t)

	c.tick()
	down := c.tick() // two runs due while it is down
	c.start(t)
	eventually(t, "the run due while down starts at once, once", c.wantJobs(t, jobName("restart", first), jobName("restart", down)))
	c.steady(t, "no other run", time.Second)
	next := c.tick()
	eventually(t, "the next run on time", c.wantJobs(t, jobName("restart", first), jobName("restart", down), jobName("restart", next)))
	eventually(t, "status", c.wantStatus(t, "restart", next, jobName("restart", first), jobName("restart", down), jobName("restart", next)))
}

// TestInvalidSchedule: a schedule that does not parse is reported in the
// Schedule condition, with no Job.
func TestInvalidSchedule(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.start(t)
	c.createCronJob(t, "bad", "every minute", nil)
	eventually(t, "the Schedule condition names the schedule", func() string {
		if cond := c.condition(t, "bad", "Schedule"); !strings.HasPrefix(cond, "False InvalidSchedule") || !strings.Contains(cond, `"every minute"`) {
			return "Schedule " + cond
		}
		return ""
	})
	if jobs := c.jobs(t); len(jobs) != 0 {
		t.Errorf("Jobs %v for an invalid schedule, want none", jobs)
	}
}

// TestTakeOverFromEarlierController: a CronJob an earlier controller ran
// long ago, whose status.lastScheduleTime and Jobs (annotated with their
// scheduled time) it left, is taken over where that controller stopped:
// the last run is the later of the two, so the minutes since the CronJob
// was created are not missed runs (TooManyMissedRuns), the last run is
// not made again, and the next one is made on time.
func TestTakeOverFromEarlierController(t *testing.T) {
	t.Parallel()
	c := newCluster(t, kubetest.Shared(t))
	c.createCronJob(t, "inherited", "* * * * *", nil)
	cj := c.cronJob(t, "inherited")
	// Three hours after the creation: 180 runs since, more than counted.
	ran := cj.GetCreationTimestamp().Add(3 * time.Hour).Truncate(time.Minute)
	before := ran.Add(-time.Minute)
	cj.Object["status"] = map[string]any{"lastScheduleTime": before.UTC().Format(time.RFC3339)}
	if _, err := c.dyn.Resource(cronjobs).Namespace(c.ns).UpdateStatus(context.Background(), cj, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("writing the CronJob's status: %v", err)
	}
	// The earlier controller's last Job, for the minute after the
	// status says (it stopped before writing its status).
	yes := true
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: jobName("inherited", ran), Namespace: c.ns,
			Annotations: map[string]string{scheduledAt: ran.UTC().Format(time.RFC3339)},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch.example.com/v1", Kind: "CronJob",
				Name: cj.GetName(), UID: cj.GetUID(), Controller: &yes}}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "run", Image: "busybox"}}}}},
	}
	if _, err := c.kube.BatchV1().Jobs(c.ns).Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the earlier controller's Job: %v", err)
	}
	c.clock.Set(ran.Add(30 * time.Second))
	c.start(t)
	next := ran.Add(time.Minute)
	eventually(t, "the Schedule condition names the next run, and no Job made", func() string {
		if cond := c.condition(t, "inherited", "Schedule"); !strings.HasPrefix(cond, "True") || !strings.Contains(cond, "next run at "+next.UTC().Format(time.RFC3339)) || strings.Contains(cond, "created") {
			return "Schedule " + cond
		}
		return ""
	})
	eventually(t, "status.lastScheduleTime the earlier Job's", c.wantStatus(t, "inherited", ran, jobName("inherited", ran)))
	c.steady(t, "no Job made for a run the earlier controller made", time.Second)
	c.tick()
	eventually(t, "the next run on time", c.wantJobs(t, jobName("inherited", ran), jobName("inherited", next)))
	eventually(t, "status", c.wantStatus(t, "inherited", next, jobName("inherited", ran), jobName("inherited", next)))
}
