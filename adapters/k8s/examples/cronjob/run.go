package main

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
)

// The resources cronjob watches: CronJobs, and the Jobs they control,
// watched only to relate them to their CronJob (kubebuilder's
// Owns(&batchv1.Job{})).
var (
	cronjobs = schema.GroupVersionResource{Group: "batch.example.com", Version: "v1", Resource: "cronjobs"}
	jobs     = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
)

// settings say where and how the operator runs.
type settings struct {
	Config     *rest.Config
	Namespaces []string            // the namespaces watched; empty: all
	Leader     *k8s.LeaderElection // nil: no election
	Clock      opbus.Clock         // nil: the system clock
	Metrics    *k8s.Metrics        // nil: none
	Logger     *slog.Logger
}

// operator is the operator set up: its Source and bus.
type operator struct {
	src *k8s.Source
	bus *opbus.Bus
}

// setup builds the Source and the bus and registers the handlers.
func setup(s settings) (*operator, error) {
	src, err := k8s.New(&k8s.Options{
		Config:         s.Config,
		Logger:         s.Logger,
		LeaderElection: s.Leader,
		Metrics:        s.Metrics,
		Resources: []k8s.Resource{
			{GVR: cronjobs, Namespaces: s.Namespaces},
			{GVR: jobs, Namespaces: s.Namespaces, Owned: true},
		},
	})
	if err != nil {
		return nil, err
	}
	bus, err := opbus.New(src.BusOptions(&opbus.Options{Logger: s.Logger, Clock: s.Clock}))
	if err != nil {
		return nil, err
	}
	clock := s.Clock
	if clock == nil {
		clock = systemClock{}
	}
	c := &controller{src: src, clock: clock}
	if err := c.register(bus); err != nil {
		return nil, err
	}
	return &operator{src: src, bus: bus}, nil
}

// run runs the operator until ctx ends.
func (op *operator) run(ctx context.Context) error { return op.src.Run(ctx, op.bus) }

// systemClock is the time of day, as the bus's default clock.
type systemClock struct{}

func (systemClock) Now() time.Time { return time.Now() }

func (systemClock) AfterFunc(d time.Duration, f func()) opbus.ClockTimer { return time.AfterFunc(d, f) }
