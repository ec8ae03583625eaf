package juju_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// containerCharm returns a charm directory declaring the containers
// workload and sidecar, and a Pebble directory where only workload's
// fake Pebble listens.
func containerCharm(t *testing.T) (charmDir, pebbleDir string, workload *jujutest.Pebble) {
	t.Helper()
	charmDir = t.TempDir()
	meta := "name: web\nrequires:\n  db:\n    interface: pgsql\ncontainers:\n  workload:\n    resource: image\n  sidecar:\n    resource: image\n"
	if err := os.WriteFile(filepath.Join(charmDir, "metadata.yaml"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	pebbleDir = jujutest.PebbleDir(t)
	return charmDir, pebbleDir, jujutest.StartPebble(t, pebbleDir, "workload")
}

func TestReadContainers(t *testing.T) {
	dir, _, _ := containerCharm(t)
	got, err := juju.ReadContainers(dir)
	if want := []string{"sidecar", "workload"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, %v; want %q", got, err, want)
	}
	if _, err := juju.ReadContainers(t.TempDir()); err == nil || !strings.Contains(err.Error(), "juju: reading containers") {
		t.Errorf("without metadata: got %v, want an error naming containers", err)
	}
}

// TestContainersInTheDocument: containers.<name>.can_connect says whether
// each declared container's Pebble answered when the hook started, and
// only the containers handlers subscribe to are probed.
func TestContainersInTheDocument(t *testing.T) {
	charmDir, pebbleDir, workload := containerCharm(t)
	up := `"workload":{"boot_id":"` + workload.BootID() + `","can_connect":true}`
	down := `"sidecar":{"boot_id":"","can_connect":false}`
	tests := []struct {
		name     string
		fields   []string
		want     string // the containers field, as JSON; "" for absent
		requests int    // requests the workload's Pebble gets
	}{
		{"all containers", []string{"containers"}, `{` + down + `,` + up + `}`, 1},
		{"the whole document", nil, `{` + down + `,` + up + `}`, 1},
		{"one container", []string{"containers.workload.can_connect"}, `{` + up + `}`, 1},
		{"its boot ID", []string{"containers.workload.boot_id"}, `{` + up + `}`, 1},
		{"the other container", []string{"containers.sidecar"}, `{` + down + `}`, 0},
		{"no container", []string{"config"}, ``, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(workload.Requests())
			var docs []map[string]any
			c := charm(handler{"h", capture(&docs), opbus.On{Fields: tt.fields}})
			c.Options, c.CharmDir, c.PebbleDir = nil, charmDir, pebbleDir
			run(t, c, "install", newModel())
			got := ""
			if v, ok := docs[0]["containers"]; ok {
				data, _ := json.Marshal(v)
				got = string(data)
			}
			if got != tt.want {
				t.Errorf("containers: got %s, want %s", got, tt.want)
			}
			if n := len(workload.Requests()) - before; n != tt.requests {
				t.Errorf("workload's Pebble got %d requests, want %d", n, tt.requests)
			}
		})
	}
	d, err := juju.DocumentOf(&opbus.Event{New: map[string]any{"containers": map[string]any{"workload": map[string]any{"can_connect": true, "boot_id": "b1"}}}})
	if err != nil || !d.Containers["workload"].CanConnect || d.Containers["workload"].BootID != "b1" {
		t.Errorf("DocumentOf: got %+v, %v", d, err)
	}
}

// TestContainerSubscriptionErrors: a container the charm does not
// declare, a misspelt container field, and every container while the
// charm's containers are unknown fail the hook before any handler runs.
func TestContainerSubscriptionErrors(t *testing.T) {
	charmDir, pebbleDir, workload := containerCharm(t)
	tests := []struct {
		field    string
		charmDir string
		want     string
	}{
		{"containers.wrokload", charmDir, `handler "h" subscribes to containers.wrokload, but the charm has no container "wrokload" (did you mean containers.workload? its containers are sidecar, workload)`},
		{"containers.workload.can_conect", charmDir, `containers.workload.can_conect, which is not in the document (did you mean containers.workload.can_connect? a container's fields are boot_id, can_connect)`},
		{"containers[*].can_connect", "", `the charm's containers are unknown (JUJU_CHARM_DIR is not set, and neither the working directory nor the program's holds metadata.yaml or charmcraft.yaml); set Options.Containers`},
	}
	for _, tt := range tests {
		t.Run(tt.field, func(t *testing.T) {
			ran := false
			c := charm(handler{"h", func(context.Context, *opbus.Event) (opbus.Status, error) { ran = true; return opbus.Status{}, nil },
				opbus.On{Fields: []string{tt.field}}})
			c.CharmDir, c.PebbleDir = tt.charmDir, pebbleDir
			_, err := c.Run(context.Background(), "install", newModel())
			if err == nil || !strings.Contains(err.Error(), tt.want) || ran {
				t.Errorf("got %v (handler ran: %v), want an error containing %q", err, ran, tt.want)
			}
		})
	}
	// Options.Containers names the containers without metadata.
	var docs []map[string]any
	c := charm(handler{"h", capture(&docs), opbus.On{Fields: []string{"containers"}}})
	c.Options = &juju.Options{Endpoints: endpoints.Endpoints, Containers: []string{"workload"}}
	c.PebbleDir = pebbleDir
	run(t, c, "install", newModel())
	if got := docs[0]["containers"]; !reflect.DeepEqual(got, map[string]any{"workload": map[string]any{"can_connect": true, "boot_id": workload.BootID()}}) {
		t.Errorf("with Options.Containers: got %v", got)
	}
}

// TestPebbleHookFields: the workload hooks carry their container, notice
// and check in the hook field, from the variables Juju sets.
func TestPebbleHookFields(t *testing.T) {
	var seen []juju.HookInfo
	c := charm(handler{"h", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		d, err := juju.DocumentOf(ev)
		if err == nil {
			d.Hook.Event = ""
			seen = append(seen, d.Hook)
		}
		return opbus.Status{}, err
	}, juju.OnHook()})
	envs := []juju.Env{
		{Name: "workload-pebble-ready", Workload: "workload"},
		{Name: "workload-pebble-custom-notice", Workload: "workload", NoticeID: "17", NoticeType: "custom", NoticeKey: "example.com/backup-done"},
		{Name: "workload-pebble-check-failed", Workload: "workload", CheckName: "alive"},
		{Name: "workload-pebble-check-recovered", Workload: "workload", CheckName: "alive"},
	}
	for _, e := range envs {
		if _, err := c.RunEnv(context.Background(), e, newModel()); err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
	}
	want := []juju.HookInfo{
		{Name: "workload-pebble-ready", Kind: juju.KindPebbleReady, Endpoint: "workload", Workload: "workload"},
		{Name: "workload-pebble-custom-notice", Kind: juju.KindPebbleCustomNotice, Endpoint: "workload", Workload: "workload",
			NoticeID: "17", NoticeType: "custom", NoticeKey: "example.com/backup-done"},
		{Name: "workload-pebble-check-failed", Kind: juju.KindPebbleCheckFailed, Endpoint: "workload", Workload: "workload", CheckName: "alive"},
		{Name: "workload-pebble-check-recovered", Kind: juju.KindPebbleCheckRecovered, Endpoint: "workload", Workload: "workload", CheckName: "alive"},
	}
	if !reflect.DeepEqual(seen, want) {
		t.Errorf("hook fields:\n got %+v\nwant %+v", seen, want)
	}
}

// TestPebbleReadyIsAChange: <container>-pebble-ready runs the handlers
// subscribed to that container, whatever their fields' values (Juju also
// runs it when only its agent restarted), and not those of other
// containers; a restarted container's new boot ID runs the handlers
// subscribed to it at any hook (J2).
func TestPebbleReadyIsAChange(t *testing.T) {
	charmDir, pebbleDir, workload := containerCharm(t)
	ran := map[string]int{}
	count := func(id string) handler {
		return handler{id, func(context.Context, *opbus.Event) (opbus.Status, error) { ran[id]++; return opbus.Status{}, nil }, opbus.On{}}
	}
	hs := []handler{count("can-connect"), count("entry"), count("sidecar"), count("config")}
	hs[0].on.Fields = []string{"containers.workload.can_connect"}
	hs[1].on.Fields = []string{"containers.workload"}
	hs[2].on.Fields = []string{"containers.sidecar"}
	hs[3].on.Fields = []string{"config"}
	c := charm(hs...)
	c.Options, c.CharmDir, c.PebbleDir = nil, charmDir, pebbleDir
	m := newModel()
	steps := []struct {
		hook    string
		restart bool
		want    map[string]int // runs so far
	}{
		{"install", false, map[string]int{"can-connect": 1, "entry": 1, "sidecar": 1, "config": 1}},
		{"update-status", false, map[string]int{"can-connect": 1, "entry": 1, "sidecar": 1, "config": 1}},
		// The agent restarted: the same boot ID.
		{"workload-pebble-ready", false, map[string]int{"can-connect": 2, "entry": 2, "sidecar": 1, "config": 1}},
		{"sidecar-pebble-ready", false, map[string]int{"can-connect": 2, "entry": 2, "sidecar": 2, "config": 1}},
		// The container restarted, seen before Juju's poll runs
		// pebble-ready: its entry changed, can_connect did not.
		{"update-status", true, map[string]int{"can-connect": 2, "entry": 3, "sidecar": 2, "config": 1}},
		{"workload-pebble-ready", false, map[string]int{"can-connect": 3, "entry": 4, "sidecar": 2, "config": 1}},
		{"update-status", false, map[string]int{"can-connect": 3, "entry": 4, "sidecar": 2, "config": 1}},
	}
	for i, s := range steps {
		if s.restart {
			workload.Restart()
		}
		m = run(t, c, s.hook, m)
		if !reflect.DeepEqual(ran, s.want) {
			t.Errorf("step %d, %s: runs %v, want %v", i+1, s.hook, ran, s.want)
		}
	}
}
