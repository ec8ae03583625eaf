package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/opbustest"
)

// explainStart is when section 5 happens, on its test clock: its output,
// and that of opbus explain -now at the same time, is the same every run.
var explainStart = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

// whyNot shows Bus.Explain on a WebApp whose deploy handler fails, whose
// scale handler succeeds and whose backup handler is skipped by its
// When. Its record stays in the FileStore at dir, for opbus explain
// (a temporary directory, removed, if dir is "").
func whyNot(ctx context.Context, dir string) error {
	fmt.Println("== 5. why did a handler run, or not?")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "opbus-quickstart-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	store, err := opbus.NewFileStore(dir)
	if err != nil {
		return err
	}
	bus, err := opbus.New(&opbus.Options{Store: store, Clock: opbustest.NewClock(explainStart),
		Backoff: opbus.Backoff{Initial: 10 * time.Second, Jitter: -1}})
	if err != nil {
		return err
	}
	handlers := []struct {
		id string
		fn opbus.HandlerFunc
		on opbus.On
	}{
		{"deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Status{}, errors.New("image registry unreachable")
		}, opbus.On{Fields: []string{"spec.image"}}},
		{"scale", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Active("3 replicas"), nil
		}, opbus.On{Fields: []string{"spec.replicas"}}},
		{"backup", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			return opbus.Active("backed up"), nil
		}, opbus.On{Fields: []string{"spec"}, When: func(ev *opbus.Event) bool {
			on, _ := opbus.Get[bool](ev.New, "spec.backup")
			return on
		}}},
	}
	for _, h := range handlers {
		if err := bus.Handle(h.id, h.fn, h.on); err != nil {
			return err
		}
	}
	key := opbus.Key{Kind: "WebApp", Namespace: "shop", Name: "front"}
	obj := map[string]any{"spec": map[string]any{"image": "shop:2", "replicas": 3, "backup": false}}
	if err := bus.Dispatch(ctx, key, obj); err == nil {
		return errors.New("deploy succeeded: the section needs it failing")
	}
	why, err := bus.Explain(ctx, key)
	if err != nil {
		return err
	}
	fmt.Print(why)
	return nil
}
