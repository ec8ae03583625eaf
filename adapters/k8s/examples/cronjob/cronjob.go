package main

import (
	"errors"
	"maps"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// The kinds in the bus's keys and in handlers' subscriptions, as
// [k8s.KindOf] spells them.
const (
	kindCronJob = "CronJob.batch.example.com"
	kindJob     = "Job.batch"
)

// scheduledAt is the annotation of each Job with the time it was
// scheduled for.
const scheduledAt = "batch.example.com/scheduled-at"

// The concurrency policies of spec.concurrencyPolicy.
const (
	allowConcurrent   = "Allow"
	forbidConcurrent  = "Forbid"
	replaceConcurrent = "Replace"
)

// controller holds cronjob's handlers.
type controller struct {
	src   *k8s.Source
	clock opbus.Clock // the bus's: the schedule's "now"
}

// register registers the handlers on bus. Each handler's ID names its
// slot, and so its condition: jobs → Jobs, schedule → Schedule; Ready sums
// them up.
func (c *controller) register(bus *opbus.Bus) error {
	return errors.Join(
		// Follow the owned Jobs: report the active ones in status.active
		// and delete finished ones beyond the history limits. The Jobs
		// arrive with the event, under related["Job.batch"]: a Job
		// created, finished or deleted runs the handler again.
		bus.Handle("jobs", c.jobs, opbus.On{
			Kinds: []string{kindCronJob},
			Fields: []string{"spec.successfulJobsHistoryLimit", "spec.failedJobsHistoryLimit",
				`related["Job.batch"][*].status`},
			Writes: []string{"status.active"},
		}),
		// Create a Job at each scheduled time: ev.Again(next run - now)
		// is the RequeueAfter, kept in the record across restarts. A Job
		// finishing runs it too, so that a run Forbid held back starts
		// once the active Job is done.
		bus.Handle("schedule", c.schedule, opbus.On{
			Kinds:  []string{kindCronJob},
			Fields: []string{"spec", `related["Job.batch"][*].status`},
			Writes: []string{"status.lastScheduleTime"},
		}),
	)
}

// cronJob is a CronJob as its handlers read it, with its related Jobs.
type cronJob struct {
	Metadata struct {
		Name              string    `json:"name"`
		Namespace         string    `json:"namespace"`
		CreationTimestamp time.Time `json:"creationTimestamp"`
	} `json:"metadata"`
	Spec struct {
		Schedule                   string         `json:"schedule"`
		StartingDeadlineSeconds    *int64         `json:"startingDeadlineSeconds"`
		ConcurrencyPolicy          string         `json:"concurrencyPolicy"`
		Suspend                    bool           `json:"suspend"`
		JobTemplate                map[string]any `json:"jobTemplate"`
		SuccessfulJobsHistoryLimit *int32         `json:"successfulJobsHistoryLimit"`
		FailedJobsHistoryLimit     *int32         `json:"failedJobsHistoryLimit"`
	} `json:"spec"`
	Status struct {
		LastScheduleTime *time.Time `json:"lastScheduleTime"`
	} `json:"status"`
	Related struct {
		Jobs map[string]batchv1.Job `json:"Job.batch"`
	} `json:"related"`
}

// decode reads ev's CronJob. One the schema let through but that cannot
// be read is a permanent failure: retrying would not change it.
func decode(ev *opbus.Event) (cronJob, error) {
	var cj cronJob
	if err := opbus.Decode(ev.New, &cj); err != nil {
		return cj, opbus.Permanent(err)
	}
	return cj, nil
}

// jobsByState sorts the CronJob's Jobs into those still running, those
// that succeeded and those that failed, each oldest first (by scheduled
// time, then name).
func (cj *cronJob) jobsByState() (active, succeeded, failed []batchv1.Job) {
	for _, name := range slices.Sorted(maps.Keys(cj.Related.Jobs)) {
		job := cj.Related.Jobs[name]
		switch finished(&job) {
		case batchv1.JobComplete:
			succeeded = append(succeeded, job)
		case batchv1.JobFailed:
			failed = append(failed, job)
		default:
			active = append(active, job)
		}
	}
	for _, jobs := range [][]batchv1.Job{active, succeeded, failed} {
		slices.SortStableFunc(jobs, func(a, b batchv1.Job) int { return scheduledTime(&a).Compare(scheduledTime(&b)) })
	}
	return active, succeeded, failed
}

// finished returns JobComplete or JobFailed for a finished Job, "" for
// one still running.
func finished(job *batchv1.Job) batchv1.JobConditionType {
	for _, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c.Type
		}
	}
	return ""
}

// scheduledTime returns the time job was scheduled for, from its
// annotation; the zero time if it has none.
func scheduledTime(job *batchv1.Job) time.Time {
	t, err := time.Parse(time.RFC3339, job.Annotations[scheduledAt])
	if err != nil {
		return time.Time{}
	}
	return t
}
