package jujutest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/internal/charmmeta"
)

// Harness runs a charm in process against a [Model] the way Juju runs it
// for one hook, state in and state out, as ops-scenario does: each run
// calls [juju.Run] with a new bus (as a new process would), the model's
// tools as its hook tools and the model's state as its store, and returns
// the model as the hook left it.
type Harness struct {
	// Setup registers the charm's handlers, as given to [juju.Run].
	Setup func(*opbus.Bus) error
	// CharmDir is the charm directory (JUJU_CHARM_DIR): the charm's
	// endpoints and config options are read from its metadata.yaml and
	// config.yaml (or charmcraft.yaml), and the charm may write files
	// there. Empty leaves JUJU_CHARM_DIR unset: juju.Run then looks for
	// the charm's metadata in the working directory, which is the
	// package's directory in a test; set Options.Endpoints if a handler
	// subscribes to every endpoint and the metadata is not there.
	CharmDir string
	// ModelName and ModelUUID are JUJU_MODEL_NAME and JUJU_MODEL_UUID;
	// empty means "test" and a fixed UUID.
	ModelName, ModelUUID string
	// PebbleDir is the directory of the workload containers' Pebble
	// sockets (OPBUS_PEBBLE_DIR), where the test starts a fake [Pebble]
	// for each container that can be reached: see [PebbleDir] and
	// [StartPebble]. Empty leaves OPBUS_PEBBLE_DIR unset, so that the
	// charm looks in /charm/containers.
	PebbleDir string
	// Options are given to juju.Run (nil means none) with Getenv, Program
	// and Runner replaced by the context's.
	Options *juju.Options
}

// Run runs hook against a copy of st and returns the copy as the hook
// left it. hook is a hook name ("install", "db-relation-changed") or
// "actions/<name>" for an action. The hook's context comes from st: a
// relation hook's relation is the only one on its endpoint, whose remote
// application it names; relation-joined names the last remote unit in
// name order, relation-changed the first one (none when it has none); a
// secret hook's secret is the model's only secret, at its latest revision;
// collect-metrics and meter-status-changed run in Juju's restricted
// context (Model.Restricted);
// and an action runs st.Action (made when nil). Use [Harness.RunEnv] for any
// other context, such as relation-departed or a relation-broken whose
// relation is gone from the model.
//
// ctx is passed to juju.Run. The returned error is juju.Run's.
func (c *Harness) Run(ctx context.Context, hook string, st *Model) (*Model, error) {
	if st == nil {
		return nil, errors.New("jujutest: Harness.Run: nil model")
	}
	e, err := hookEnv(hook, st)
	if err != nil {
		return nil, err
	}
	return c.RunEnv(ctx, e, st)
}

// RunEnv is [Harness.Run] with the hook's context given in full: e's Name
// (and Kind, for an action) and the variables of its kind. Its Unit, model
// names, CharmDir and Version default to st's and the context's.
//
// The returned model is a copy of st after the hook: its Calls are those
// of this run only; its status, status history, logs, workload version and
// action results are what the hook did; its state and relation data
// include the hook's writes only if it succeeded (it returned nil), as
// Juju applies them only when the hook exits 0. A failed hook (not an
// action) sets HookError, which shows the unit in error as Juju does, and
// a hook that succeeds clears it.
//
// When the charm's metadata is known (in CharmDir, or the working
// directory when CharmDir is empty), config-get includes its options'
// defaults, and an action runs as `juju run` queues it: an action the
// charm does not declare, or parameters its schema refuses (a wrong type,
// an undeclared parameter where additionalProperties is false, a missing
// required one), is an error and the charm does not run (the returned
// model is nil); otherwise the parameters' defaults are filled in.
func (c *Harness) RunEnv(ctx context.Context, e juju.Env, st *Model) (*Model, error) {
	if st == nil {
		return nil, errors.New("jujutest: Harness.RunEnv: nil model")
	}
	if c.Setup == nil {
		return nil, errors.New("jujutest: Harness has no Setup function")
	}
	out, err := st.clone()
	if err != nil {
		return nil, err
	}
	out.Calls = nil
	if e.Kind == juju.KindUnknown && e.DispatchPath == "" {
		e.Kind = juju.HookKind(e.Name)
	}
	if out.charm, err = c.charm(); err != nil {
		return nil, err
	}
	if e.Kind == juju.KindAction {
		if e.ActionName == "" {
			e.ActionName = e.Name
		}
		switch {
		case out.Action == nil:
			out.Action = &Action{Name: e.Name}
		case out.Action.Name != e.Name:
			return nil, fmt.Errorf("jujutest: running action %q, but the model's action is %q", e.Name, out.Action.Name)
		}
		if err := out.queueAction(cmp.Or(e.Version, "3.6.4")); err != nil {
			return nil, err
		}
	}
	if e.Unit = cmp.Or(e.Unit, st.Unit); e.Unit == "" {
		return nil, errors.New("jujutest: the model has no Unit")
	}
	e.ModelName = cmp.Or(e.ModelName, c.ModelName, "test")
	e.ModelUUID = cmp.Or(e.ModelUUID, c.ModelUUID, "7a3b5c1d-0e2f-4a6b-8c9d-1e2f3a4b5c6d")
	e.CharmDir = cmp.Or(e.CharmDir, c.CharmDir)
	e.Version = cmp.Or(e.Version, "3.6.4")
	vars := e.Vars()
	if c.PebbleDir != "" {
		vars[juju.PebbleDirEnv] = c.PebbleDir
	}

	var opts juju.Options
	if c.Options != nil {
		opts = *c.Options
	}
	opts.Getenv = func(k string) string { return vars[k] }
	opts.Program = "dispatch"
	opts.Runner = NewRunner(out)
	if e.Kind.IsRestricted() {
		out.Restricted = e.Kind
	}
	if e.Relation != nil {
		id := e.Relation.ID
		out.HookRelation = &id
	}
	err = juju.Run(ctx, c.Setup, &opts)
	out.Restricted, out.HookRelation = "", nil
	if e.Kind != juju.KindAction {
		out.HookError = ""
	}
	if err != nil {
		out.Discard()
		if e.Kind != juju.KindAction {
			out.HookError = fmt.Sprintf("hook failed: %q", e.Name)
		}
		if errors.Is(err, juju.ErrMissingEnv) {
			err = fmt.Errorf("%w (give the hook's context with Harness.RunEnv)", err)
		}
		return out, err
	}
	out.Commit()
	return out, nil
}

// hookEnv derives the context of hook from st.
func hookEnv(hook string, st *Model) (juju.Env, error) {
	if name, ok := strings.CutPrefix(hook, "actions/"); ok {
		return juju.Env{Name: name, Kind: juju.KindAction}, nil
	}
	name := strings.TrimPrefix(hook, "hooks/")
	e := juju.Env{Name: name, Kind: juju.HookKind(name)}
	switch {
	case e.Kind.IsRelation():
		ep := e.Endpoint()
		var rels []*Relation
		for i := range st.Relations {
			if st.Relations[i].Endpoint == ep {
				rels = append(rels, &st.Relations[i])
			}
		}
		if len(rels) != 1 {
			return e, fmt.Errorf("jujutest: hook %q: the model has %d relations on endpoint %q, so which one is meant is unclear; use Harness.RunEnv", name, len(rels), ep)
		}
		r := rels[0]
		e.Relation = &juju.RelationID{Endpoint: ep, ID: r.ID}
		e.RemoteApp = r.RemoteApp
		units := slices.Sorted(slices.Values(r.RemoteUnits))
		switch e.Kind {
		case juju.KindRelationJoined:
			if len(units) == 0 {
				return e, fmt.Errorf("jujutest: hook %q: relation %d has no remote unit to join", name, r.ID)
			}
			e.RemoteUnit = units[len(units)-1]
		case juju.KindRelationChanged:
			if len(units) > 0 {
				e.RemoteUnit = units[0]
			}
		case juju.KindRelationDeparted:
			return e, fmt.Errorf("jujutest: hook %q: the departing unit is not in the model; use Harness.RunEnv", name)
		}
	case e.Kind == juju.KindPebbleReady:
		e.Workload = e.Endpoint()
	case e.Kind.IsSecret():
		if len(st.Secrets) != 1 {
			return e, fmt.Errorf("jujutest: hook %q: the model has %d secrets, so which one is meant is unclear; use Harness.RunEnv", name, len(st.Secrets))
		}
		s := &st.Secrets[0]
		e.SecretID, e.SecretLabel, e.SecretRevision = s.ID, s.Label, s.Latest()
	}
	return e, nil
}

// clone returns a deep copy of m.
func (m *Model) clone() (*Model, error) {
	data, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("jujutest: copying the model: %w", err)
	}
	c := new(Model)
	if err := decodeModel(data, c); err != nil {
		return nil, fmt.Errorf("jujutest: copying the model: %w", err)
	}
	return c, nil
}

// charm reads what the charm declares from CharmDir or, when it is empty,
// from the working directory, as juju.Run finds it; nil when neither
// holds the charm's metadata.
func (c *Harness) charm() (*charmmeta.Charm, error) {
	dir := c.CharmDir
	if dir == "" {
		dir = "."
		if !slices.ContainsFunc([]string{"metadata.yaml", "charmcraft.yaml"}, func(name string) bool {
			_, err := os.Stat(name)
			return err == nil
		}) {
			return nil, nil
		}
	}
	return readCharm(dir)
}

// readCharm reads what the charm in dir declares; nil when dir holds
// none of its metadata files.
func readCharm(dir string) (*charmmeta.Charm, error) {
	ch, err := charmmeta.Read(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("jujutest: reading the charm's metadata: %w", err)
	}
	return ch, nil
}

// queueAction does what Juju does before it runs m.Action, when the charm
// is known: it refuses an action the charm does not declare, fills in the
// parameters' defaults and validates them against the action's schema
// (Juju 4, from version, refuses undeclared parameters of an action that
// does not say additionalProperties). A refused action does not run:
// `juju run` fails with the error.
func (m *Model) queueAction(version string) error {
	if m.charm == nil {
		return nil
	}
	a, ok := m.charm.Action(m.Action.Name)
	if !ok {
		return fmt.Errorf("jujutest: juju run %s %s: action %q not defined on unit %q", m.Unit, m.Action.Name, m.Action.Name, m.Unit)
	}
	major, _, _ := strings.Cut(version, ".")
	n, _ := strconv.Atoi(major)
	params, err := a.Params(m.Action.Params, n >= 4)
	if err != nil {
		return fmt.Errorf("jujutest: juju run %s %s: %w", m.Unit, m.Action.Name, err)
	}
	m.Action.Params = params
	return nil
}
