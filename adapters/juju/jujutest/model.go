// Package jujutest is an in-memory Juju model for testing charms: what one
// unit can see and change through Juju's hook tools, and fakes of those
// tools that read and change it.
//
// A test builds a [Model], then runs the charm's handlers against it with
// [Harness.Run], which returns the model as the hook left it (state in,
// state out, as ops-scenario does). Lower down, it can run a charm in
// process with a [Runner] as the tools' [juju.Runner], or as a real process
// with PATH set to [InstallTools]'s directory and OPBUS_JUJU_MODEL naming a
// file written by [WriteModel]. Afterwards, as Juju does, it applies the
// hook's staged writes when the hook succeeded ([Model.Commit],
// [CommitFile]) or drops them when it failed ([Model.Discard],
// [DiscardFile]), and inspects the model.
//
// [Pebble] is a fake of the Pebble that manages a workload container,
// listening on the container's socket ([StartPebble], [PebbleDir]), so
// that a sidecar charm's handlers run offline too: give its directory as
// [Harness.PebbleDir] or, to a charm run as a process, as OPBUS_PEBBLE_DIR.
package jujutest

import (
	"maps"
	"slices"
	"strings"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/internal/charmmeta"
)

// Model is the part of a Juju model one unit sees through hook tools. It is
// plain data: tests build it with a literal, and it round-trips through JSON
// unchanged. A Model is not safe for concurrent use; [Runner] serialises
// the tool calls it runs.
//
// Reads made by the tools see the hook's own staged writes, as in Juju.
type Model struct {
	// Unit is the local unit's name ("app/0").
	Unit string `json:"unit"`
	// App is the local application's name; empty means the part of Unit
	// before the slash.
	App string `json:"app,omitempty"`
	// Leader reports whether the unit is its application's leader.
	Leader bool `json:"leader,omitempty"`
	// Config is the application's configuration, as config-get prints it.
	// In the copies Harness.Run returns and ReadModel reads, numbers are
	// json.Numbers, which keep integers above 2^53 exact.
	Config map[string]any `json:"config,omitempty"`
	// Relations are the relations the unit takes part in.
	Relations []Relation `json:"relations,omitempty"`
	// State is the unit's committed server-side state (state-get/state-set).
	State map[string]string `json:"state,omitempty"`
	// Secrets are the secrets the unit owns or observes, committed.
	Secrets []Secret `json:"secrets,omitempty"`

	// UnitStatus is the unit's workload status; the zero value reads as
	// "unknown". UnitStatusHistory holds every status set, oldest first.
	UnitStatus        Status   `json:"unit_status"`
	UnitStatusHistory []Status `json:"unit_status_history,omitempty"`
	// AppStatus and AppStatusHistory are the same for the application.
	AppStatus        Status   `json:"app_status"`
	AppStatusHistory []Status `json:"app_status_history,omitempty"`
	// HookError is set after a hook fails, as Juju sets the unit agent's
	// status: `hook failed: "<hook>"`; a hook that succeeds clears it. While
	// it is set, juju status shows the unit in error ([Model.ShownStatus]),
	// but status-get prints the workload status, as in Juju. A failed
	// action leaves it alone: Juju does not put the unit in error for it.
	HookError string `json:"hook_error,omitempty"`
	// WorkloadVersion is what application-version-set last set.
	WorkloadVersion string `json:"workload_version,omitempty"`
	// Logs are the lines written with juju-log, oldest first.
	Logs []LogLine `json:"logs,omitempty"`

	// Action is the running action; nil outside an action, where the
	// action tools fail as in Juju.
	Action *Action `json:"action,omitempty"`

	// Restricted is the kind of the hook running in Juju's restricted
	// context ([juju.Kind.IsRestricted]), set by [Harness.RunEnv] while it
	// runs: in collect-metrics every tool but juju-log and add-metric
	// fails, in meter-status-changed every tool but juju-log, with Juju's
	// "not implemented for restricted context". Empty outside them.
	Restricted juju.Kind `json:"restricted,omitempty"`
	// HookRelation is the relation of the running relation hook, set by
	// [Harness.RunEnv] (and by the tools [InstallTools] builds, from
	// JUJU_RELATION_ID) while it runs: as Juju does, the relation tools
	// take it as -r when -r is not given, so secret-revoke refuses --app
	// there. Nil outside relation hooks.
	HookRelation *int `json:"hook_relation,omitempty"`
	// Metrics are the values add-metric added, by key.
	Metrics map[string]string `json:"metrics,omitempty"`

	// Calls are the hook tool calls made, in order, failed ones included.
	Calls []Call `json:"calls,omitempty"`

	// Failures makes tools fail, for tests of failure handling: a call of
	// a tool named here does nothing and exits 1, printing "ERROR" and the
	// message on standard error.
	Failures map[string]string `json:"failures,omitempty"`

	// Staged holds the writes Juju applies only when the hook exits 0
	// (state-set, state-delete, relation-set); nil when there are none.
	Staged *Staged `json:"staged,omitempty"`

	// charm is what the charm declares, when known: config-get adds its
	// options' defaults and action-get its parameters' defaults. Set by
	// Harness.RunEnv and ToolMain from the charm directory.
	charm *charmmeta.Charm
}

// Relation is one relation the unit takes part in, with the data the unit
// can read and write in it.
type Relation struct {
	// ID is the relation's number (the 7 in "db:7").
	ID int `json:"id"`
	// Endpoint is the local endpoint's name.
	Endpoint string `json:"endpoint"`
	// RemoteApp is the related application.
	RemoteApp string `json:"remote_app"`
	// RemoteUnits are the remote units that have joined, as relation-list
	// prints them.
	RemoteUnits []string `json:"remote_units,omitempty"`
	// RemoteUnitsData is each remote unit's data, by unit name. A unit that
	// has departed may keep its data here, readable as in Juju.
	RemoteUnitsData map[string]map[string]string `json:"remote_units_data,omitempty"`
	// RemoteAppData is the remote application's data.
	RemoteAppData map[string]string `json:"remote_app_data,omitempty"`
	// LocalUnitData and LocalAppData are the local unit's and application's
	// committed data.
	LocalUnitData map[string]string `json:"local_unit_data,omitempty"`
	LocalAppData  map[string]string `json:"local_app_data,omitempty"`
	// Dead marks a relation being torn down (or removed with
	// remove-relation --force): relation-ids still lists it, but every
	// tool given its id fails with "relation not found", as in Juju.
	Dead bool `json:"dead,omitempty"`
}

// Status is a workload status as status-set sets it.
type Status struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// LogLine is one juju-log call.
type LogLine struct {
	Level   string `json:"level"`
	Message string `json:"message"`
}

// Action is the action a unit is running.
type Action struct {
	// Name is the action's name.
	Name string `json:"name"`
	// Params are its parameters, as action-get prints them.
	Params map[string]any `json:"params,omitempty"`
	// Results are what action-set has set: nested maps of strings, a dotted
	// key making a level.
	Results map[string]any `json:"results,omitempty"`
	// Failed reports whether action-fail was called; FailMessage is its
	// message.
	Failed      bool   `json:"failed,omitempty"`
	FailMessage string `json:"fail_message,omitempty"`
	// Logs are the action-log messages, oldest first.
	Logs []string `json:"logs,omitempty"`
}

// Call is one hook tool call: the tool, its arguments and its exit code.
type Call struct {
	Name string   `json:"name"`
	Args []string `json:"args"`
	Exit int      `json:"exit"`
}

// Staged holds a hook's writes that Juju applies only when the hook exits 0.
// Each field holds the whole new value of what the hook changed.
type Staged struct {
	// State is the unit's new server-side state; nil when unchanged.
	State map[string]string `json:"state"`
	// UnitData and AppData are the new local unit and local application
	// data, by relation id, of the relations the hook changed.
	UnitData map[int]map[string]string `json:"unit_data,omitempty"`
	AppData  map[int]map[string]string `json:"app_data,omitempty"`
	// Secrets are the new secrets; nil when unchanged.
	Secrets []Secret `json:"secrets"`
}

// Commit applies the staged writes, as Juju does when a hook exits 0.
func (m *Model) Commit() {
	s := m.Staged
	m.Staged = nil
	if s == nil {
		return
	}
	if s.State != nil {
		m.State = s.State
	}
	if s.Secrets != nil {
		m.Secrets = s.Secrets
	}
	for i := range m.Relations {
		r := &m.Relations[i]
		if d, ok := s.UnitData[r.ID]; ok {
			r.LocalUnitData = d
		}
		if d, ok := s.AppData[r.ID]; ok {
			r.LocalAppData = d
		}
	}
}

// ShownStatus returns the unit's status as juju status shows it: error
// with [Model.HookError] after a failed hook, else the workload status.
func (m *Model) ShownStatus() Status {
	if m.HookError != "" {
		return Status{Status: "error", Message: m.HookError}
	}
	return orUnknown(m.UnitStatus)
}

// Discard drops the staged writes, as Juju does when a hook fails.
func (m *Model) Discard() { m.Staged = nil }

// CallCount returns how many calls of the named tool were made.
func (m *Model) CallCount(tool string) int {
	n := 0
	for _, c := range m.Calls {
		if c.Name == tool {
			n++
		}
	}
	return n
}

// Relation returns the relation with the given id, or nil.
func (m *Model) Relation(id int) *Relation {
	for i := range m.Relations {
		if m.Relations[i].ID == id {
			return &m.Relations[i]
		}
	}
	return nil
}

// app returns the local application's name.
func (m *Model) app() string {
	if m.App != "" {
		return m.App
	}
	app, _, _ := strings.Cut(m.Unit, "/")
	return app
}

// staged returns m.Staged, creating it.
func (m *Model) staged() *Staged {
	if m.Staged == nil {
		m.Staged = &Staged{}
	}
	return m.Staged
}

// state returns the state as the hook sees it (staged writes included).
// The result must not be modified.
func (m *Model) state() map[string]string {
	if m.Staged != nil && m.Staged.State != nil {
		return m.Staged.State
	}
	return m.State
}

// unitData returns the local unit's data in r as the hook sees it.
func (m *Model) unitData(r *Relation) map[string]string {
	if m.Staged != nil {
		if d, found := m.Staged.UnitData[r.ID]; found {
			return d
		}
	}
	return r.LocalUnitData
}

// appData returns the local application's data in r as the hook sees it.
func (m *Model) appData(r *Relation) map[string]string {
	if m.Staged != nil {
		if d, found := m.Staged.AppData[r.ID]; found {
			return d
		}
	}
	return r.LocalAppData
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
