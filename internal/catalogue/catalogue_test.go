package catalogue

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/fsm"
)

// entry is one bad input: what a user wrote, and the error they see.
type entry struct {
	area  string
	input string
	err   func() error
	want  string
}

func handler(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{}, nil }

// webAppSpec is a typed spec, as a handler reads it or a caller builds it.
type webAppSpec struct {
	Replicas   int `json:"replicas"`
	Containers []struct {
		Name string `json:"name"`
		Port int    `json:"port"`
	} `json:"containers"`
}

// readDoc is a document as encoding/json decodes it, for the typed reads.
var readDoc = map[string]any{"spec": map[string]any{"version": "1.2", "ratio": 0.5, "port": 8080.0,
	"containers": []any{map[string]any{"name": "app", "image": "app:1"}}}}

func busWith(t *testing.T) *opbus.Bus {
	b, err := opbus.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Handle("config", handler, opbus.On{}); err != nil {
		t.Fatal(err)
	}
	return b
}

// jujuSetup runs the install hook of a charm whose metadata.yaml declares
// the endpoints istio-pilot and peers, and config.yaml the options kind
// and port, with one handler subscribed to field.
func jujuSetup(t *testing.T, field string) error {
	dir := t.TempDir()
	meta := "name: gateway\nrequires:\n  istio-pilot:\n    interface: k8s-service\npeers:\n  peers:\n    interface: gateway-peers\n"
	config := "options:\n  kind:\n    type: string\n  port:\n    type: int\n"
	if err := errors.Join(os.WriteFile(filepath.Join(dir, "metadata.yaml"), []byte(meta), 0o644),
		os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(config), 0o644)); err != nil {
		t.Fatal(err)
	}
	c := &jujutest.Harness{CharmDir: dir, Setup: func(b *opbus.Bus) error { return b.Handle("h", handler, opbus.On{Fields: []string{field}}) }}
	_, err := c.Run(context.Background(), "install", &jujutest.Model{Unit: "gateway/0"})
	return err
}

func entries(t *testing.T) []entry {
	ctx := context.Background()
	env := func(vars map[string]string) func(string) string {
		return func(k string) string { return vars[k] }
	}
	storeWith := func(data string) opbus.Store {
		s := opbus.NewMemoryStore()
		_ = s.Save(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, []byte(data))
		return s
	}
	dispatchOn := func(s opbus.Store) error {
		b, _ := opbus.New(&opbus.Options{Store: s})
		_ = b.Handle("h", handler, opbus.On{})
		return b.Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{})
	}
	pod := fsm.Spec{Name: "pod", Initial: "pending",
		States:   []fsm.State{{Name: "pending"}, {Name: "running"}},
		Triggers: []fsm.Trigger{{Name: "start", Src: []string{"pending"}, Dst: "running"}}}
	return []entry{
		{"field path", "spec..containers", func() error { _, err := opbus.ParsePath("spec..containers"); return err },
			"opbus: field path spec..containers: at offset 5: empty key between dots: expected a key"},
		{"field path", "status.", func() error { _, err := opbus.ParsePath("status."); return err },
			"opbus: field path status.: at offset 7: trailing dot: expected a key after '.'"},
		{"field path", "spec.containers[", func() error { _, err := opbus.ParsePath("spec.containers["); return err },
			"opbus: field path spec.containers[: at offset 15: unclosed '[': expected an index, '*', a quoted key or field=value"},
		{"field path", "spec.containers[-1]", func() error { _, err := opbus.ParsePath("spec.containers[-1]"); return err },
			"opbus: field path spec.containers[-1]: at offset 16: bad index -1: expected a non-negative decimal number"},
		{"field path", `metadata.annotations."a/b"`, func() error { _, err := opbus.ParsePath(`metadata.annotations."a/b"`); return err },
			`opbus: field path metadata.annotations."a/b": at offset 21: quoted key outside brackets: write ["key"]`},
		{"field path", "(empty)", func() error { _, err := opbus.ParsePath(""); return err },
			"opbus: field path : at offset 0: empty path: expected a key such as status.phase"},
		{"handler", `Handle("config", …) twice`, func() error { return busWith(t).Handle("config", handler, opbus.On{}) },
			`opbus: handler "config": duplicate ID: the slot "config" is taken by a handler`},
		{"handler", `On{Fields: ["status..phase"]}`, func() error {
			return busWith(t).Handle("h", handler, opbus.On{Fields: []string{"status..phase"}})
		}, `opbus: handler "h": field path status..phase: at offset 7: empty key between dots: expected a key`},
		{"handler", `On{Fields: ["metadata.resourceVersion"]}`, func() error {
			return busWith(t).Handle("h", handler, opbus.On{Fields: []string{"metadata.resourceVersion"}})
		}, `opbus: handler "h": field metadata.resourceVersion is ignored by the bus (per-write noise or the library's own writes), so it would never fire`},
		{"handler", `On{Types: [Delete], Fields: ["spec"]}`, func() error {
			return busWith(t).Handle("h", handler, opbus.On{Types: []opbus.EventType{opbus.Delete}, Fields: []string{"spec"}})
		}, `opbus: handler "h": fields [spec] can never change on Delete: a delete handler sees the last state whole`},
		{"handler", `On{Kinds: [""]}`, func() error { return busWith(t).Handle("h", handler, opbus.On{Kinds: []string{""}}) },
			`opbus: handler "h": empty kind in Kinds: it would match nothing`},
		{"handler", `On{Fields: ["status.readyReplicas"], Writes: ["status"]}`, func() error {
			return busWith(t).Handle("h", handler, opbus.On{Fields: []string{"status.readyReplicas"}, Writes: []string{"status"}})
		}, `opbus: handler "h": Writes [status] covers field status.readyReplicas whole, so its own writes are all it could see there and it would never run on it: narrow Writes or drop the field`},
		{"handler", `On{Writes: ["status..ready"]}`, func() error {
			return busWith(t).Handle("h", handler, opbus.On{Writes: []string{"status..ready"}})
		}, `opbus: handler "h": Writes: field path status..ready: at offset 7: empty key between dots: expected a key`},
		{"handler", `IgnoreKind("", "status.x")`, func() error { return busWith(t).IgnoreKind("", "status.x") },
			`opbus: IgnoreKind: empty kind: expected the kind of the keys whose paths to ignore`},
		{"handler", `IgnoreKind("Widget", "status..x")`, func() error { return busWith(t).IgnoreKind("Widget", "status..x") },
			`opbus: IgnoreKind("Widget"): ignored path: field path status..x: at offset 7: empty key between dots: expected a key`},
		{"handler", `On{Kinds: ["Widget"], Fields: ["status.mine"]} after IgnoreKind("Widget", "status.mine")`, func() error {
			b, _ := opbus.New(nil)
			_ = b.IgnoreKind("Widget", "status.mine")
			return b.Handle("h", handler, opbus.On{Kinds: []string{"Widget"}, Fields: []string{"status.mine"}})
		}, `opbus: handler "h": field status.mine is ignored on each of its kinds [Widget] (IgnoreKind), so it would never fire`},
		{"relation", `On{Fields: ["related.Deployment[*].status"]}` + " without Relate", func() error {
			return busWith(t).Handle("h", handler, opbus.On{Fields: []string{"related.Deployment[*].status"}})
		}, `opbus: handler "h": field related.Deployment[*].status reads related objects, but no relation is declared: call Bus.Relate first`},
		{"relation", `On{Fields: ["related.Service[*].status"]}` + " with only Deployment related", func() error {
			b := busWith(t)
			_ = b.Relate("Deployment", func(opbus.Key, map[string]any) []opbus.Key { return nil })
			return b.Handle("h", handler, opbus.On{Fields: []string{"related.Service[*].status"}})
		}, `opbus: handler "h": field related.Service[*].status: no relation is declared for kind "Service" (declared: [Deployment]), so it would never change`},
		{"relation", "a relation function that returns a key without a name", func() error {
			b := busWith(t)
			_ = b.Relate("Deployment", func(opbus.Key, map[string]any) []opbus.Key { return []opbus.Key{{Kind: "WebApp"}} })
			return b.Dispatch(ctx, opbus.Key{Kind: "Deployment", Namespace: "default", Name: "web"}, map[string]any{})
		}, `opbus: the relation function of kind "Deployment" on Deployment default/web: object key kind="WebApp" namespace="" name="": an object needs a kind and a name`},
		{"object", "an object without a name", func() error {
			return busWith(t).Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default"}, map[string]any{})
		}, `opbus: object key kind="Pod" namespace="default" name="": an object needs a kind and a name`},
		{"value", `{"x": NaN}`, func() error {
			return busWith(t).Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{"x": math.NaN()})
		}, "opbus: state of Pod default/web: value at x: not a finite number: JSON has no NaN or infinity"},
		{"path", "$.spec.version", func() error { _, err := opbus.ParsePath("$.spec.version"); return err },
			`opbus: field path $.spec.version: at offset 0: looks like JSONPath: opbus paths have no '$' or '$.' (write status.phase, spec.containers[name=app].image)`},
		{"path", "/spec/version", func() error { _, err := opbus.ParsePath("/spec/version"); return err },
			`opbus: field path /spec/version: at offset 0: looks like a JSON Pointer: opbus paths are dotted (write spec.version for /spec/version, spec.containers[0] for /spec/containers/0)`},
		{"path", "status.conditions[type==Ready]", func() error { _, err := opbus.ParsePath("status.conditions[type==Ready]"); return err },
			`opbus: field path status.conditions[type==Ready]: at offset 22: '==' in [type==…]: a match has one '=', as in [type=value]`},
		{"options", "Workers: -1", func() error { _, err := opbus.New(&opbus.Options{Workers: -1}); return err },
			"opbus: Options.Workers is -1: expected a positive count, or 0 for the default"},
		{"options", "Writers: -1", func() error { _, err := opbus.New(&opbus.Options{Writers: -1}); return err },
			"opbus: Options.Writers is -1: expected a positive count, or 0 for 4 × Workers"},
		{"options", "Workers: 1 << 62", func() error { _, err := opbus.New(&opbus.Options{Workers: 1 << 62}); return err },
			"opbus: Options.Workers is 4611686018427387904: expected at most 65536"},
		{"options", "Backoff{Factor: 0.5}", func() error { _, err := opbus.New(&opbus.Options{Backoff: opbus.Backoff{Factor: 0.5}}); return err },
			"opbus: Options.Backoff.Factor is 0.5: expected 1 or more (each retry waits at least as long as the last), or 0 for 2"},
		{"options", "Backoff{Initial: time.Minute, Max: time.Second}", func() error {
			_, err := opbus.New(&opbus.Options{Backoff: opbus.Backoff{Initial: time.Minute, Max: time.Second}})
			return err
		}, "opbus: Options.Backoff.Max (1s) is below Initial (1m0s): expected Max ≥ Initial"},
		{"status", `level "Blocked"`, func() error { var l opbus.Level; return l.UnmarshalText([]byte("Blocked")) },
			`opbus: unknown status level "Blocked": expected one of unknown, active, waiting, maintenance, blocked, error`},
		{"stored record", "not JSON", func() error { return dispatchOn(storeWith("{oops")) },
			"opbus: stored record of Pod default/web: not a record: invalid character 'o' looking for beginning of object key string"},
		{"stored record", `{"v":9}`, func() error { return dispatchOn(storeWith(`{"v":9}`)) },
			"opbus: stored record of Pod default/web: unknown version 9: this build reads versions 1 to 4"},
		{"document", "nil", func() error {
			b, _ := opbus.New(nil)
			return b.Observe(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, nil)
		}, "opbus: state of Pod default/web: document is nil: expected a map[string]any, empty for an object with no fields"},
		{"document", "a map that contains itself", func() error {
			b, _ := opbus.New(nil)
			loop := map[string]any{}
			loop["self"] = loop
			return b.Observe(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, loop)
		}, "opbus: state of Pod default/web: value at self.self.self.self.self.self.self.self: nested deeper than 1000 levels (a value that contains itself?)"},
		{"document", "{spec: WebAppSpec{…}} (a struct)", func() error {
			b, _ := opbus.New(nil)
			return b.Observe(ctx, opbus.Key{Kind: "WebApp", Namespace: "default", Name: "web"}, map[string]any{"spec": webAppSpec{Replicas: 2}})
		}, "opbus: state of WebApp default/web: value at spec: unsupported type catalogue.webAppSpec: a struct's JSON form follows its field tags: convert it with opbus.Document"},
		{"document", `{spec: {tags: []any{"a", "b", make(chan int)}}}`, func() error {
			b, _ := opbus.New(nil)
			return b.Dispatch(ctx, opbus.Key{Kind: "WebApp", Namespace: "default", Name: "web"}, map[string]any{"spec": map[string]any{"tags": []any{"a", "b", make(chan int)}}})
		}, "opbus: state of WebApp default/web: value at spec.tags[2]: unsupported type chan int: expected a JSON-like value: a map with string keys, a slice, a string, a bool, a number or nil"},
		{"document", "{metadata: {creationTimestamp: time.Time{}}}", func() error {
			b, _ := opbus.New(nil)
			return b.Observe(ctx, opbus.Key{Kind: "WebApp", Namespace: "default", Name: "web"}, map[string]any{"metadata": map[string]any{"creationTimestamp": time.Time{}}})
		}, "opbus: state of WebApp default/web: value at metadata.creationTimestamp: unsupported type time.Time: it has its own JSON encoding: convert it with opbus.Document"},
		{"document", `{data: {key: []byte("x")}}`, func() error {
			b, _ := opbus.New(nil)
			return b.Observe(ctx, opbus.Key{Kind: "Secret", Namespace: "default", Name: "web"}, map[string]any{"data": map[string][]byte{"key": []byte("x")}})
		}, `opbus: state of Secret default/web: value at data.key: unsupported type []byte: encoding/json writes bytes in base64: convert them to a string`},
		{"document", `Document([]string{"a"})`, func() error { _, err := opbus.Document([]string{"a"}); return err },
			"opbus: document of []string: its JSON form is an array, not an object: a document is a JSON object"},
		{"typed read", `Get[int](doc, "spec.ratio") of 0.5`, func() error { _, err := opbus.Get[int](readDoc, "spec.ratio"); return err },
			"opbus: value at spec.ratio: got float64 0.5, want int: not a whole number"},
		{"typed read", `Get[int8](doc, "spec.port") of 8080`, func() error { _, err := opbus.Get[int8](readDoc, "spec.port"); return err },
			"opbus: value at spec.port: got float64 8080, want int8: out of its range"},
		{"typed read", `Get[string](doc, "spec.image") of an absent field`, func() error { _, err := opbus.Get[string](readDoc, "spec.image"); return err },
			`opbus: field spec.image is absent: spec has no key "image"`},
		{"typed read", `Get[string](doc, "spec.containers[name=db].image")`, func() error {
			_, err := opbus.Get[string](readDoc, "spec.containers[name=db].image")
			return err
		}, `opbus: field spec.containers[name=db].image is absent: spec.containers has no element with name=db`},
		{"typed read", `Get[string](doc, "spec.version.major") of a string`, func() error { _, err := opbus.Get[string](readDoc, "spec.version.major"); return err },
			`opbus: value at spec.version: got string, want a map to look up "major" in (reading spec.version.major)`},
		{"typed read", `Get[string](doc, "spec.containers[*].image")`, func() error { _, err := opbus.Get[string](readDoc, "spec.containers[*].image"); return err },
			"opbus: field path spec.containers[*].image: [*] stands for any number of values and Get reads one: name an element by index or key, or visit them all with Resolve"},
		{"typed read", `Get[WebAppSpec](doc, "spec") with a string port`, func() error {
			_, err := opbus.Get[webAppSpec](map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "port": "http"}}}}, "spec")
			return err
		}, "opbus: value at spec.containers[0].port: got string, want int"},
		{"typed read", "Decode(doc, spec) (not a pointer)", func() error { return opbus.Decode(readDoc, webAppSpec{}) },
			"opbus: Decode into catalogue.webAppSpec: expected a non-nil pointer"},
		{"handler result", "a status of level 17", func() error {
			b, _ := opbus.New(nil)
			_ = b.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) { return opbus.Status{Level: 17}, nil }, opbus.On{})
			return b.Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{})
		}, `opbus: handler "h" on Pod default/web: returned a bad status: level 17 is not a level: expected LevelUnknown to LevelError (0 to 5)`},
		{"handler result", `a status with reason "invalid-schedule"`, func() error {
			b, _ := opbus.New(nil)
			_ = b.Handle("h", func(context.Context, *opbus.Event) (opbus.Status, error) {
				return opbus.Blocked("bad schedule").WithReason("invalid-schedule"), nil
			}, opbus.On{})
			return b.Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{})
		}, `opbus: handler "h" on Pod default/web: returned a bad status: status reason "invalid-schedule" is not a reason: expected a CamelCase word such as "InvalidSchedule" (a letter, then letters, digits, '_', ',' or ':', not ending in ',' or ':'; at most 1024 bytes)`},
		{"stored record", `a digest that is not one`, func() error { return dispatchOn(storeWith(`{"v":1,"digests":{"h":"xyz"}}`)) },
			`opbus: stored record of Pod default/web: digests: "h": "xyz" is not a digest (16 bytes in unpadded URL-safe base64)`},
		{"state machine", "a trigger to an undeclared state", func() error {
			s := pod
			s.Triggers = append(s.Triggers[:1:1], fsm.Trigger{Name: "crash", Src: []string{"running"}, Dst: "faild"})
			_, err := fsm.New(s)
			return err
		}, `fsm: machine "pod": trigger "crash": destination "faild" is not a declared state`},
		{"state machine", `Fire(ctx, ev, "explode")`, func() error {
			m, err := fsm.New(pod)
			if err != nil {
				return err
			}
			b, _ := opbus.New(nil)
			if err := m.Register(b); err != nil {
				return err
			}
			_ = b.Handle("fire", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
				_, err := m.Fire(ctx, ev, "explode")
				return opbus.Status{}, err
			}, opbus.On{})
			return b.Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{"metadata": map[string]any{"uid": "1"}})
		}, `opbus: handler "fire" on Pod default/web: fsm: machine "pod" on Pod default/web: unknown event "explode" (declared: start)`},
		{"state machine", `a stored state "exploded"`, func() error {
			m, err := fsm.New(pod)
			if err != nil {
				return err
			}
			b, _ := opbus.New(&opbus.Options{Store: storeWith(`{"v":1,"values":{"fsm/pod":"exploded"}}`)})
			if err := m.Register(b); err != nil {
				return err
			}
			return b.Dispatch(ctx, opbus.Key{Kind: "Pod", Namespace: "default", Name: "web"}, map[string]any{"metadata": map[string]any{"uid": "1"}})
		}, `opbus: handler "pod/state" on Pod default/web: fsm: machine "pod" on Pod default/web: stored state "exploded" is not a declared state (declared: pending, running)`},
		{"juju state", "a record over Juju's 64 KiB", func() error {
			c := &jujutest.Harness{Setup: func(b *opbus.Bus) error {
				return b.Handle("big", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
					ev.SetValue("blob", strings.Repeat("x", 70<<10))
					return opbus.Active(""), nil
				}, opbus.On{Kinds: []string{juju.ObjectUnit}, Fields: []string{"config"}})
			}}
			_, err := c.Run(ctx, "install", &jujutest.Model{Unit: "web/0"})
			return err
		}, `juju: install: storing the records: the records in state key "opbus" take 71801 bytes, more than Juju's limit of 65536 bytes for a state value: keep what handlers persist small`},
		{"juju handler", `On{Fields: ["relations.istio-pliot"]}`, func() error {
			return jujuSetup(t, "relations.istio-pliot")
		}, `juju: handler "h" subscribes to relations.istio-pliot, but the charm has no endpoint "istio-pliot" (did you mean relations.istio-pilot? its endpoints are istio-pilot, peers)`},
		{"juju handler", `On{Fields: ["config.knd"]}`, func() error {
			return jujuSetup(t, "config.knd")
		}, `juju: handler "h" subscribes to config.knd, but the charm has no config option "knd" (did you mean config.kind? its options are kind, port)`},
		{"juju handler", `On{Fields: ["hook.evnt"]}`, func() error {
			return jujuSetup(t, "hook.evnt")
		}, `juju: handler "h" subscribes to hook.evnt, which is not in the document (did you mean hook.event? hook's fields are check, departing-unit, endpoint, event, kind, meter-info, meter-status, name, notice-id, notice-key, notice-type, relation-id, remote-app, remote-unit, secret-id, secret-label, secret-revision, storage-id, storage-location, workload)`},
		{"juju handler", `On{Kinds: ["Unit"]}`, func() error {
			c := &jujutest.Harness{Setup: func(b *opbus.Bus) error { return b.Handle("h", handler, opbus.On{Kinds: []string{"Unit"}}) }}
			_, err := c.Run(ctx, "install", &jujutest.Model{Unit: "web/0"})
			return err
		}, `juju: handler "h" has kind "Unit": under Juju the bus sees only "unit" and "application" documents, so it would never run (did you mean "unit"?)`},
		{"juju environment", "a hook with no JUJU_UNIT_NAME", func() error {
			_, err := juju.ParseEnv(env(map[string]string{"JUJU_DISPATCH_PATH": "hooks/install"}), "dispatch")
			return err
		}, `juju: missing hook environment: hook "install" needs JUJU_UNIT_NAME`},
		{"juju environment", "a relation hook with no JUJU_RELATION_ID", func() error {
			_, err := juju.ParseEnv(env(map[string]string{"JUJU_DISPATCH_PATH": "hooks/db-relation-changed", "JUJU_UNIT_NAME": "app/0",
				"JUJU_RELATION": "db", "JUJU_REMOTE_APP": "pg", "JUJU_REMOTE_UNIT": "pg/0"}), "dispatch")
			return err
		}, `juju: missing hook environment: hook "db-relation-changed" needs JUJU_RELATION_ID`},
		{"juju relation id", "db-3", func() error { _, err := juju.ParseRelationID("db-3"); return err }, `juju: invalid relation id "db-3" (want endpoint:number)`},
		{"juju hook tool", "status-set not on PATH", func() error {
			return juju.Tools{Runner: juju.ExecRunner{Env: []string{"PATH=/nonexistent/opbus-bin"}}}.StatusSet(ctx, "active", "")
		}, `juju: hook tool not found: "status-set" in PATH "/nonexistent/opbus-bin"`},
		{"juju status", `status-set "blocked!"`, func() error {
			return juju.Tools{Runner: juju.ExecRunner{Env: []string{"PATH=" + t.TempDir()}}}.StatusSet(ctx, "blocked!", "")
		}, `juju: invalid status level "blocked!" (want maintenance, blocked, waiting or active)`},
		{"juju state", "a state value over 64 KiB", func() error {
			return juju.Tools{Runner: juju.ExecRunner{Env: []string{"PATH=" + t.TempDir()}}}.StateSet(ctx, map[string]string{"k": strings.Repeat("x", 64<<10+1)})
		}, `juju: state-set: value of key "k" is 65537 bytes, more than 65536`},
	}
}

const docPath = "../../docs/bad-input.md"
const begin, end = "<!-- root module: generated by internal/catalogue -->", "<!-- end of root module -->"

func TestCatalogue(t *testing.T) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n| where | bad input | the error |\n|---|---|---|\n", begin)
	for _, e := range entries(t) {
		err := e.err()
		if err == nil {
			t.Errorf("%s %q: no error", e.area, e.input)
			continue
		}
		if got := err.Error(); got != e.want {
			t.Errorf("%s %q:\n got: %s\nwant: %s", e.area, e.input, got, e.want)
		}
		fmt.Fprintf(&b, "| %s | `%s` | `%s` |\n", e.area, escape(e.input), escape(err.Error()))
	}
	b.WriteString(end)
	section := b.String()
	doc, err := os.ReadFile(docPath)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	current := string(doc)
	i, j := strings.Index(current, begin), strings.Index(current, end)
	if os.Getenv("OPBUS_WRITE_CATALOGUE") == "1" {
		switch {
		case current == "":
			current = docHeader + section + "\n"
		case i < 0 || j < 0:
			current = strings.TrimRight(current, "\n") + "\n\n" + section + "\n"
		default:
			current = current[:i] + section + current[j+len(end):]
		}
		if err := os.MkdirAll(filepath.Dir(docPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docPath, []byte(current), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if i < 0 || j < 0 || current[i:j+len(end)] != section {
		t.Errorf("docs/bad-input.md is out of date: run OPBUS_WRITE_CATALOGUE=1 go test ./internal/catalogue/")
	}
}

func escape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "`", "'")
}

const docHeader = `# Bad input catalogue

Every bad input opbus is given is reported as an error that names the input
and what was expected, and nothing is lost: a bad field path fails at
registration, a stored record that cannot be read is reported and never
overwritten. The tables are generated from the table tests that assert each
message (internal/catalogue for the root module, the Kubernetes adapter's
catalogue test for its module), so they cannot drift from the code.

`
