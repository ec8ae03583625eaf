package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// The kinds in the bus's keys and in handlers' subscriptions, as
// [k8s.KindOf] spells them.
const (
	kindWebApp     = "WebApp.example.opbus.dev"
	kindDeployment = "Deployment.apps"
	kindService    = "Service"
)

// operator holds webapp's handlers.
type operator struct {
	src           *k8s.Source
	probeInterval time.Duration
	probeTimeout  time.Duration
	http          http.Client
}

// register registers the handlers on bus. Each handler's ID names its
// slot, and so its condition: workload → Workload, ready → Ready,
// health → Health.
func (op *operator) register(bus *opbus.Bus) error {
	return errors.Join(
		// Create or update the children when the spec they follow changes,
		// or when one of them goes (the uid of a related object is absent
		// once it is deleted, and new when it is created again).
		bus.Handle("workload", op.workload, opbus.On{
			Kinds: []string{kindWebApp},
			Fields: []string{"spec.image", "spec.replicas",
				`related["Deployment.apps"][*].metadata.uid`, `related.Service[*].metadata.uid`},
		}),
		// Follow the Deployment's readiness. The handler writes
		// status.readyReplicas into its own WebApp: Writes keeps that write
		// from running it again.
		bus.Handle("ready", op.ready, opbus.On{
			Kinds:  []string{kindWebApp},
			Fields: []string{"spec.replicas", `related["Deployment.apps"][*].status.readyReplicas`},
			Writes: []string{"status.readyReplicas"},
		}),
		// Poll spec.healthURL every probe interval, whether or not anything
		// changed.
		bus.Handle("health", op.health, opbus.On{
			Kinds:  []string{kindWebApp},
			Fields: []string{"spec.healthURL"},
			Every:  op.probeInterval,
		}),
	)
}

// webApp is the part of a WebApp the handlers read.
type webApp struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Spec struct {
		Image     string `json:"image"`
		Replicas  int32  `json:"replicas"`
		HealthURL string `json:"healthURL"`
	} `json:"spec"`
}

// decode reads ev's WebApp. A WebApp the schema let through but that
// cannot be read is a permanent failure: retrying would not change it.
func decode(ev *opbus.Event) (webApp, error) {
	var app webApp
	if err := opbus.Decode(ev.New, &app); err != nil {
		return app, opbus.Permanent(err)
	}
	return app, nil
}

// workload applies the WebApp's Deployment and Service.
func (op *operator) workload(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	app, err := decode(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	c := op.src.Client(ev)
	if _, err := c.Apply(ctx, deploymentFor(app)); err != nil {
		return opbus.Status{}, fmt.Errorf("applying Deployment %s: %w", app.Metadata.Name, err)
	}
	if _, err := c.Apply(ctx, serviceFor(app)); err != nil {
		return opbus.Status{}, fmt.Errorf("applying Service %s: %w", app.Metadata.Name, err)
	}
	return opbus.Active(fmt.Sprintf("Deployment runs %s × %d behind Service %s", app.Spec.Image, app.Spec.Replicas, app.Metadata.Name)), nil
}

// ready copies the Deployment's ready replicas to the WebApp's status and
// is active exactly when they are as many as spec.replicas.
func (op *operator) ready(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	app, err := decode(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	ready, err := opbus.Get[int64](ev.New, fmt.Sprintf(`related["Deployment.apps"][%q].status.readyReplicas`, app.Metadata.Name))
	if err != nil && !errors.Is(err, opbus.ErrAbsent) {
		return opbus.Status{}, err
	}
	if err := op.src.Client(ev).ApplyStatus(ctx, map[string]any{"readyReplicas": ready}); err != nil {
		return opbus.Status{}, fmt.Errorf("writing status.readyReplicas: %w", err)
	}
	msg := fmt.Sprintf("%d of %d replicas ready", ready, app.Spec.Replicas)
	if ready == int64(app.Spec.Replicas) {
		return opbus.Active(msg), nil
	}
	return opbus.Waiting(msg).WithReason("ReplicasNotReady"), nil
}

// health GETs spec.healthURL: active on a 2xx answer, blocked otherwise.
// With no healthURL it has no opinion, and the WebApp no Health condition.
func (op *operator) health(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	app, err := decode(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	url := app.Spec.HealthURL
	if url == "" {
		return opbus.Status{}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(op.probeInterval, op.probeTimeout))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return opbus.Blocked(fmt.Sprintf("healthURL %q: %v", url, err)).WithReason("InvalidHealthURL"), nil
	}
	resp, err := op.http.Do(req)
	if err != nil {
		return opbus.Blocked(fmt.Sprintf("GET %s: %v", url, err)).WithReason("Unreachable"), nil
	}
	resp.Body.Close()
	msg := fmt.Sprintf("GET %s: HTTP %s", url, resp.Status)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return opbus.Active(msg), nil
	}
	return opbus.Blocked(msg).WithReason("Unhealthy"), nil
}
