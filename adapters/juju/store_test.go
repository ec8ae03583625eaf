package juju_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

func TestStateCalls(t *testing.T) {
	c := charm(handler{"config", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		return opbus.Active(fmt.Sprint("port ", ev.New["config"].(map[string]any)["port"])), nil
	}, opbus.On{Fields: []string{"config.port"}}})
	m := run(t, c, "install", newModel())
	if g, s := m.CallCount("state-get"), m.CallCount("state-set"); g != 1 || s != 1 {
		t.Errorf("install: %d state-get and %d state-set, want 1 and 1", g, s)
	}
	m = run(t, c, "update-status", m)
	if g, s := m.CallCount("state-get"), m.CallCount("state-set"); g != 1 || s != 0 {
		t.Errorf("update-status: %d state-get and %d state-set, want 1 and 0", g, s)
	}
	m.Config["port"] = 1.0
	m = run(t, c, "config-changed", m)
	if g, s := m.CallCount("state-get"), m.CallCount("state-set"); g != 1 || s != 1 {
		t.Errorf("config-changed: %d state-get and %d state-set, want 1 and 1", g, s)
	}
	if len(m.State) != 1 || m.State[juju.DefaultStateKey] == "" {
		t.Errorf("state %v: want one key %q", m.State, juju.DefaultStateKey)
	}
}

func TestCorruptRecordIsNeverOverwritten(t *testing.T) {
	for _, stored := range []string{"garbage", "null", `{"unit web/0":{"v":99}}`} {
		t.Run(stored, func(t *testing.T) {
			ran := false
			c := charm(handler{"h", func(context.Context, *opbus.Event) (opbus.Status, error) {
				ran = true
				return opbus.Active(""), nil
			}, opbus.On{Fields: []string{"leader"}}})
			m := newModel()
			m.State = map[string]string{juju.DefaultStateKey: stored, "other": "x"}
			out, err := c.Run(context.Background(), "install", m)
			if !errors.Is(err, opbus.ErrCorruptRecord) {
				t.Fatalf("got %v, want ErrCorruptRecord", err)
			}
			if ran || out.CallCount("state-set") != 0 || !reflect.DeepEqual(out.State, m.State) {
				t.Errorf("ran %v, %d state-set calls, state %v", ran, out.CallCount("state-set"), out.State)
			}
		})
	}
}

func TestRecordTooBig(t *testing.T) {
	c := charm(handler{"h", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		ev.SetValue("blob", strings.Repeat("x", juju.MaxStateValue))
		return opbus.Active(""), nil
	}, opbus.On{Fields: []string{"leader"}}})
	m, err := c.Run(context.Background(), "install", newModel())
	if err == nil || !strings.Contains(err.Error(), "more than Juju's limit of 65536 bytes") || !strings.Contains(err.Error(), "take 6") {
		t.Fatalf("got %v, want an error naming the size and the limit", err)
	}
	if m.CallCount("state-set") != 0 || m.State != nil {
		t.Errorf("%d state-set calls, state %v", m.CallCount("state-set"), m.State)
	}
}
