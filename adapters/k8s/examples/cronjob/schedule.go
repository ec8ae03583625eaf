package main

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// lastRun is the stored value that holds the time of the CronJob's last
// run: the record keeps it, so a Job deleted by the history limit is not
// created again for its time, as it would be were the last run worked out
// from the Jobs that remain.
const lastRun = "lastScheduleTime"

// maxMissed bounds the runs missed since the last one that are counted.
const maxMissed = 100

// schedule creates the Job of the CronJob's latest scheduled time not yet
// run, when the run is not past spec.startingDeadlineSeconds and
// spec.concurrencyPolicy lets it start, and asks to run again at the next
// scheduled time.
func (c *controller) schedule(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	cj, err := decode(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	sched, err := cron.ParseStandard(cj.Spec.Schedule)
	if err != nil {
		return opbus.Blocked(fmt.Sprintf("spec.schedule %q: %v", cj.Spec.Schedule, err)).WithReason("InvalidSchedule"), nil
	}
	last, err := lastRunOf(ev, &cj)
	if err != nil {
		return opbus.Status{}, err
	}
	cl := c.src.Client(ev)
	// done writes status.lastScheduleTime with the handler's status: at
	// every run, since a status field the handler leaves out is given up.
	done := func(st opbus.Status) (opbus.Status, error) {
		if err := applyLastRun(ctx, cl, last); err != nil {
			return opbus.Status{}, err
		}
		return st, nil
	}
	if cj.Spec.Suspend {
		return done(opbus.Waiting("suspended").WithReason("Suspended"))
	}
	now := c.clock.Now()
	due, next, err := runs(sched, &cj, last, now)
	if err != nil {
		return done(opbus.Blocked(err.Error()).WithReason("TooManyMissedRuns"))
	}
	ev.Again(next.Sub(now)) // RequeueAfter: look again at the next scheduled time
	if due.IsZero() {
		return done(opbus.Active("next run at " + next.Format(time.RFC3339)))
	}
	active, _, _ := cj.jobsByState()
	switch cj.Spec.ConcurrencyPolicy {
	case forbidConcurrent:
		if len(active) > 0 {
			return done(opbus.Waiting(fmt.Sprintf("the run of %s waits: Job %s is active", due.Format(time.RFC3339), active[0].Name)).WithReason("ConcurrencyForbidden"))
		}
	case replaceConcurrent:
		for i := range active {
			if err := cl.Delete(ctx, &active[i], &k8s.DeleteOptions{Propagation: metav1.DeletePropagationBackground}); err != nil {
				return opbus.Status{}, fmt.Errorf("replacing active Job %s: %w", active[i].Name, err)
			}
		}
	}
	job := jobFor(&cj, due)
	if _, err := cl.Apply(ctx, job); err != nil {
		return opbus.Status{}, fmt.Errorf("creating Job %s: %w", job.name(), err)
	}
	// Kept with the record: the run of due is done, whatever becomes of
	// its Job.
	if err := ev.SetValue(lastRun, due.Format(time.RFC3339)); err != nil {
		return opbus.Status{}, err
	}
	last = due
	return done(opbus.Active(fmt.Sprintf("created Job %s for %s; next run at %s", job.name(), due.Format(time.RFC3339), next.Format(time.RFC3339))))
}

// lastRunOf returns the time of the CronJob's last run, from the stored
// value; the zero time before its first. With no value stored (a CronJob
// an earlier controller ran), it is the later of status.lastScheduleTime
// and the scheduled-at annotations of the CronJob's Jobs, as that
// controller left them: the runs before it are not counted as missed,
// nor its last run made again.
func lastRunOf(ev *opbus.Event, cj *cronJob) (time.Time, error) {
	v, ok := ev.Value(lastRun)
	if !ok {
		var last time.Time
		if cj.Status.LastScheduleTime != nil {
			last = *cj.Status.LastScheduleTime
		}
		for name := range cj.Related.Jobs {
			job := cj.Related.Jobs[name]
			if at := scheduledTime(&job); at.After(last) {
				last = at
			}
		}
		return last, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return time.Time{}, opbus.Permanent(fmt.Errorf("stored value %s %q: %w", lastRun, v, err))
	}
	return t, nil
}

// applyLastRun writes status.lastScheduleTime: last, or none before the
// first run. The handler writes it at every run: a status field it left
// out would be given up.
func applyLastRun(ctx context.Context, cl *k8s.Client, last time.Time) error {
	status := map[string]any{}
	if !last.IsZero() {
		status["lastScheduleTime"] = last.UTC().Format(time.RFC3339)
	}
	if err := cl.ApplyStatus(ctx, status); err != nil {
		return fmt.Errorf("writing status.lastScheduleTime: %w", err)
	}
	return nil
}

// runs returns the latest scheduled time after the last run (or the
// CronJob's creation) and by now that is not past the starting deadline,
// or the zero time if there is none, and the next scheduled time after
// now.
func runs(sched cron.Schedule, cj *cronJob, last, now time.Time) (due, next time.Time, err error) {
	earliest := last
	if earliest.IsZero() {
		earliest = cj.Metadata.CreationTimestamp
	}
	if d := cj.Spec.StartingDeadlineSeconds; d != nil {
		if from := now.Add(-time.Duration(*d) * time.Second); from.After(earliest) {
			earliest = from // runs before then are past their deadline
		}
	}
	missed := 0
	for t := sched.Next(earliest); !t.After(now); t = sched.Next(t) {
		due = t
		if missed++; missed > maxMissed {
			return time.Time{}, time.Time{}, fmt.Errorf("more than %d runs missed since %s: set spec.startingDeadlineSeconds, or check the clock", maxMissed, earliest.Format(time.RFC3339))
		}
	}
	return due, sched.Next(now), nil
}

// job is a Job to apply.
type job map[string]any

func (j job) name() string { return j["metadata"].(map[string]any)["name"].(string) }

// jobFor returns the Job of cj's run at t: its jobTemplate, named after cj
// and t, annotated with t. The adapter's client adds the controller owner
// reference to cj.
func jobFor(cj *cronJob, t time.Time) job {
	var tmpl struct {
		Metadata struct {
			Labels      map[string]any `json:"labels"`
			Annotations map[string]any `json:"annotations"`
		} `json:"metadata"`
		Spec map[string]any `json:"spec"`
	}
	// What does not fit is left out: the API server says what is missing.
	_ = opbus.Decode(cj.Spec.JobTemplate, &tmpl)
	annotations := maps.Clone(tmpl.Metadata.Annotations)
	if annotations == nil {
		annotations = map[string]any{}
	}
	annotations[scheduledAt] = t.UTC().Format(time.RFC3339)
	return job{
		"apiVersion": "batch/v1", "kind": "Job",
		"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", cj.Metadata.Name, t.Unix()), "namespace": cj.Metadata.Namespace,
			"labels": tmpl.Metadata.Labels, "annotations": annotations},
		"spec": tmpl.Spec,
	}
}
