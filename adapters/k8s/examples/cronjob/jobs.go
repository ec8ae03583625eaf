package main

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// jobs reports the CronJob's active Jobs in status.active and deletes the
// oldest finished ones beyond spec.successfulJobsHistoryLimit and
// spec.failedJobsHistoryLimit.
func (c *controller) jobs(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	cj, err := decode(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	active, succeeded, failed := cj.jobsByState()
	cl := c.src.Client(ev)
	for _, prune := range []struct {
		jobs  []batchv1.Job
		limit *int32
	}{{succeeded, cj.Spec.SuccessfulJobsHistoryLimit}, {failed, cj.Spec.FailedJobsHistoryLimit}} {
		if prune.limit == nil {
			continue
		}
		for i := range max(len(prune.jobs)-int(*prune.limit), 0) {
			// Deleted only if it is still the Job of this uid; its Pods
			// go after it (background propagation).
			err := cl.Delete(ctx, &prune.jobs[i], &k8s.DeleteOptions{Propagation: metav1.DeletePropagationBackground})
			if err != nil {
				return opbus.Status{}, fmt.Errorf("deleting old Job %s: %w", prune.jobs[i].Name, err)
			}
		}
	}
	status := map[string]any{} // no active Job: status.active goes
	if len(active) > 0 {
		refs := make([]any, 0, len(active))
		for _, job := range active {
			refs = append(refs, map[string]any{"apiVersion": "batch/v1", "kind": "Job",
				"namespace": job.Namespace, "name": job.Name, "uid": string(job.UID)})
		}
		status["active"] = refs
	}
	if err := cl.ApplyStatus(ctx, status); err != nil {
		return opbus.Status{}, fmt.Errorf("writing status.active: %w", err)
	}
	return opbus.Active(fmt.Sprintf("%d active, %d succeeded, %d failed", len(active), len(succeeded), len(failed))), nil
}
