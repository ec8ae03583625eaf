package juju

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/opbus/opbus"
)

// The kinds of the keys [Run] dispatches the document under. A handler
// that lists no Kinds sees every key; see [Run] for when that matters.
const (
	// ObjectUnit is the kind of the unit's key, {Kind: "unit", Name: <unit>}.
	ObjectUnit = "unit"
	// ObjectApplication is the kind of the application's key, {Kind:
	// "application", Name: <app>}, dispatched on the leader only.
	ObjectApplication = "application"
)

// Document is the typed form of the document [Run] builds, for handlers
// that would rather read a struct than a map: see [DocumentOf]. Its JSON
// names are the field paths handlers subscribe to; the package
// documentation describes each. Fields the adapter did not read (no
// handler subscribes to them) are zero.
type Document struct {
	// Hook is what runs and its context.
	Hook HookInfo `json:"hook"`
	// Unit and App name the unit ("web/0") and its application ("web").
	Unit string `json:"unit"`
	App  string `json:"app"`
	// Model names the model.
	Model ModelInfo `json:"model"`
	// Leader reports whether the unit leads its application.
	Leader bool `json:"leader"`
	// Config is the application's configuration, as config-get prints it.
	Config map[string]any `json:"config"`
	// Relations lists each endpoint's relations, by endpoint name.
	Relations map[string][]Relation `json:"relations"`
	// Action is the running action; nil outside an action.
	Action *ActionInfo `json:"action"`
	// Containers are the charm's workload containers, by name.
	Containers map[string]ContainerInfo `json:"containers"`
}

// HookInfo is the document's hook field: what Juju is running and its
// context. Fields a hook does not carry are empty; each is the [Env] field
// of the same name.
type HookInfo struct {
	// Name is the hook's name or the action's; Kind classifies it.
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Event is new on every run; see [OnHook].
	Event string `json:"event"`
	// Endpoint is the endpoint, storage or container of a relation,
	// storage or workload hook ([Env.Endpoint]).
	Endpoint string `json:"endpoint"`
	// RelationID is the relation of a relation hook; nil otherwise.
	RelationID    *int   `json:"relation-id"`
	RemoteUnit    string `json:"remote-unit"`
	RemoteApp     string `json:"remote-app"`
	DepartingUnit string `json:"departing-unit"`
	// Workload, NoticeID, NoticeType, NoticeKey and CheckName are those
	// of workload (Pebble) hooks.
	Workload   string `json:"workload"`
	NoticeID   string `json:"notice-id"`
	NoticeType string `json:"notice-type"`
	NoticeKey  string `json:"notice-key"`
	CheckName  string `json:"check"`
	// StorageID and StorageLocation are those of storage hooks.
	StorageID       string `json:"storage-id"`
	StorageLocation string `json:"storage-location"`
	// SecretID, SecretLabel and SecretRevision are those of secret hooks.
	SecretID       string `json:"secret-id"`
	SecretLabel    string `json:"secret-label"`
	SecretRevision int    `json:"secret-revision"`
	// MeterStatus and MeterInfo are those of meter-status-changed.
	MeterStatus string `json:"meter-status"`
	MeterInfo   string `json:"meter-info"`
}

// ModelInfo is the document's model field.
type ModelInfo struct {
	// Name and UUID are the model's.
	Name string `json:"name"`
	UUID string `json:"uuid"`
}

// Relation is one relation in the document's relations field.
type Relation struct {
	// ID is the relation's number (the 7 in "db:7").
	ID int `json:"id"`
	// App is the remote application.
	App string `json:"app"`
	// Units holds each remote unit's data, by unit name.
	Units map[string]map[string]string `json:"units"`
	// AppData is the remote application's data.
	AppData map[string]string `json:"app-data"`
}

// ActionInfo is the document's action field, present during an action.
type ActionInfo struct {
	// Name and UUID identify the action run.
	Name string `json:"name"`
	UUID string `json:"uuid"`
	// Params are the action's parameters, as action-get prints them.
	Params map[string]any `json:"params"`
}

// DocumentOf decodes the document an event carries (its New state, or Old
// for a deleted object) into a [Document]. Numbers in Config and
// Action.Params are as in the document: an integer is an int64, exact
// above 2^53 (one beyond int64 a [json.Number]), and a number with a
// fraction or an exponent a float64.
func DocumentOf(ev *opbus.Event) (*Document, error) {
	data, err := json.Marshal(ev.Object())
	if err != nil {
		return nil, fmt.Errorf("juju: encoding the document: %w", err)
	}
	d := new(Document)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(d); err != nil {
		return nil, fmt.Errorf("juju: decoding the document: %w", err)
	}
	exactNumbers(d.Config)
	if d.Action != nil {
		exactNumbers(d.Action.Params)
	}
	return d, nil
}

// OnHook returns the filter of a handler that runs on every dispatch of
// the named hooks, even when the same hook runs again: it subscribes to
// hook.event, which is new on every dispatch, and runs only when the hook's
// name or kind is one of names ("install", "db-relation-joined",
// "relation-changed" for every endpoint's). No names means every hook.
// Actions never match; see [OnAction].
//
// The adapter reads only what handlers subscribe to, so append to the
// result's Fields what the handler reads ("config", "relations.db"); add
// Kinds when the charm has application handlers.
func OnHook(names ...string) opbus.On {
	names = slices.Clone(names)
	return opbus.On{Fields: []string{"hook.event"}, When: func(ev *opbus.Event) bool {
		name, kind := hookOf(ev)
		if kind == string(KindAction) || name == "" {
			return false
		}
		return len(names) == 0 || slices.Contains(names, name) || slices.Contains(names, kind)
	}}
}

// OnAction returns the filter of a handler that runs on every run of the
// named actions; no names means every action. It subscribes to
// hook.event and action, so the handler finds the parameters in the
// document's action.params; it reports results with [Tools.ActionSet]
// (see [FromContext]).
func OnAction(names ...string) opbus.On {
	names = slices.Clone(names)
	return opbus.On{Fields: []string{"hook.event", "action"}, When: func(ev *opbus.Event) bool {
		name, kind := hookOf(ev)
		return kind == string(KindAction) && (len(names) == 0 || slices.Contains(names, name))
	}}
}

// hookOf returns the hook name and kind an event's document carries.
func hookOf(ev *opbus.Event) (name, kind string) {
	h, _ := ev.Object()["hook"].(map[string]any)
	name, _ = h["name"].(string)
	kind, _ = h["kind"].(string)
	return name, kind
}

// topFields are the document's top-level fields; hookFields those of hook.
var (
	topFields  = []string{"action", "app", "config", "containers", "hook", "leader", "model", "relations", "unit"}
	hookFields = []string{"check", "departing-unit", "endpoint", "event", "kind", "meter-info", "meter-status", "name", "notice-id",
		"notice-key", "notice-type", "relation-id", "remote-app", "remote-unit", "secret-id",
		"secret-label", "secret-revision", "storage-id", "storage-location", "workload"}
)

// plan is what a dispatch must read, derived from the handlers'
// subscriptions.
type plan struct {
	all       bool            // a handler subscribes to the whole document
	fields    map[string]bool // top-level fields subscribed to
	endpoints []string        // relation endpoints to read, sorted
	app       bool            // some handler handles the application

	containers []string // workload containers to probe, sorted
	probe      bool     // whether the document has the containers field
}

func (p *plan) wants(field string) bool { return p.all || p.fields[field] }

// declared is what the charm declares that handlers may name.
type declared struct {
	endpoints    []string // relation endpoints, sorted; nil when unknown
	endpointsErr error    // why endpoints is nil
	options      []string // config options, sorted; nil when unknown
	params       []string // the parameters of all actions, sorted; nil when unknown
}

// fieldsOf lists the fields of the document's objects that have fixed
// fields, by the path of the object: hook, model, action and each
// relation in relations.<endpoint>.
var fieldsOf = map[string][]string{
	"hook":     hookFields,
	"model":    {"name", "uuid"},
	"action":   {"name", "params", "uuid"},
	"relation": {"app", "app-data", "id", "units"},
}

// newPlan checks the subscriptions against the document and lists what to
// read. charm says what the charm declares: its endpoints, to read for a
// handler that subscribes to every endpoint and to check the endpoints
// handlers name, and its config options, to check the options handlers
// name.
func newPlan(subs []opbus.Subscription, charm declared) (*plan, error) {
	known := charm.endpoints
	p := &plan{fields: map[string]bool{}}
	every := "" // a handler that needs every endpoint, for the error
	eps := map[string]bool{}
	var kindless []string
	for _, s := range subs {
		for _, k := range s.Kinds {
			if k != ObjectUnit && k != ObjectApplication {
				hint := ""
				if strings.EqualFold(k, ObjectUnit) || strings.EqualFold(k, ObjectApplication) {
					hint = fmt.Sprintf(" (did you mean %q?)", strings.ToLower(k))
				}
				return nil, fmt.Errorf("juju: handler %q has kind %q: under Juju the bus sees only %q and %q documents, so it would never run%s", s.ID, k, ObjectUnit, ObjectApplication, hint)
			}
		}
		if slices.Contains(s.Kinds, ObjectApplication) {
			p.app = true
		}
		if len(s.Kinds) == 0 {
			kindless = append(kindless, s.ID)
		}
		if len(s.Fields) == 0 {
			p.all = true
			every = s.ID
			continue
		}
		for _, f := range s.Fields {
			if len(f) == 0 || f[0].Kind != opbus.SegKey {
				p.all = true // [*]… reaches every field
				every = s.ID
				continue
			}
			top := f[0].Key
			if !slices.Contains(topFields, top) {
				return nil, fmt.Errorf("juju: handler %q subscribes to %s, which is not in the document (%sits fields are %s)", s.ID, f, didYouMean("", top, topFields), strings.Join(topFields, ", "))
			}
			p.fields[top] = true
			if err := checkField(s.ID, f, charm); err != nil {
				return nil, err
			}
			switch {
			case top != "relations":
			case len(f) == 1 || f[1].Kind == opbus.SegAny:
				every = s.ID
				eps["*"] = true
			case f[1].Kind == opbus.SegKey:
				eps[f[1].Key] = true
			}
		}
	}
	if p.app && len(kindless) > 0 {
		return nil, fmt.Errorf("juju: handler %q lists no Kinds while application handlers exist: on the leader it would run for the application document too; give it Kinds: []string{%q}", kindless[0], ObjectUnit)
	}
	if p.all || eps["*"] {
		if known == nil {
			return nil, fmt.Errorf("juju: handler %q reads every relation endpoint, but the charm's endpoints are unknown (%v); set Options.Endpoints", every, charm.endpointsErr)
		}
		p.endpoints = slices.Clone(known)
	} else {
		p.endpoints = slices.Sorted(maps.Keys(eps))
	}
	return p, nil
}

// checkField refuses a field f of handler id, whose top-level field is in
// the document, that the document cannot have: a field of hook, model,
// action or a relation that is not one, a field below a string or a bool,
// an endpoint, a config option or an action parameter the charm does not
// declare.
func checkField(id string, f opbus.Path, charm declared) error {
	top := f[0].Key
	below := func(i int, what string, names []string) error {
		if len(f) <= i || f[i].Kind != opbus.SegKey || slices.Contains(names, f[i].Key) {
			return nil
		}
		at := f[:i].String() + "."
		return fmt.Errorf("juju: handler %q subscribes to %s, which is not in the document (%s%s's fields are %s)", id, f, didYouMean(at, f[i].Key, names), what, strings.Join(names, ", "))
	}
	switch top {
	case "unit", "app", "leader":
		if len(f) > 1 {
			return fmt.Errorf("juju: handler %q subscribes to %s, which is not in the document (%s is a %s: nothing is below it)", id, f, top, map[string]string{"unit": "string", "app": "string", "leader": "bool"}[top])
		}
	case "hook", "model":
		return below(1, top, fieldsOf[top])
	case "action":
		if err := below(1, top, fieldsOf[top]); err != nil {
			return err
		}
		if len(f) < 3 || f[1] != opbus.MapKey("params") || f[2].Kind != opbus.SegKey || charm.params == nil || slices.Contains(charm.params, f[2].Key) {
			return nil
		}
		if len(charm.params) == 0 {
			return fmt.Errorf("juju: handler %q subscribes to %s, but no action of the charm has parameters", id, f)
		}
		return fmt.Errorf("juju: handler %q subscribes to %s, but no action of the charm has a parameter %q (%sits actions' parameters are %s)", id, f, f[2].Key, didYouMean("action.params.", f[2].Key, charm.params), strings.Join(charm.params, ", "))
	case "config":
		if len(f) < 2 || f[1].Kind != opbus.SegKey || charm.options == nil || slices.Contains(charm.options, f[1].Key) {
			return nil
		}
		if len(charm.options) == 0 {
			return fmt.Errorf("juju: handler %q subscribes to %s, but the charm declares no config options", id, f)
		}
		return fmt.Errorf("juju: handler %q subscribes to %s, but the charm has no config option %q (%sits options are %s)", id, f, f[1].Key, didYouMean("config.", f[1].Key, charm.options), strings.Join(charm.options, ", "))
	case "relations":
		if len(f) < 2 || f[1].Kind != opbus.SegKey {
			return nil
		}
		if known := charm.endpoints; known != nil && !slices.Contains(known, f[1].Key) {
			return fmt.Errorf("juju: handler %q subscribes to %s, but the charm has no endpoint %q (%sits endpoints are %s)", id, f, f[1].Key, didYouMean("relations.", f[1].Key, known), strings.Join(known, ", "))
		}
		if len(f) > 2 && f[2].Kind == opbus.SegKey {
			return fmt.Errorf("juju: handler %q subscribes to %s, which is not in the document (%s is a list of relations: address them with [*], [id=3] or [app=pg])", id, f, f[:2])
		}
		return below(3, "a relation", fieldsOf["relation"])
	}
	return nil
}

// reader builds the document of one dispatch.
type reader struct {
	tools     Tools
	env       *Env
	plan      *plan
	pebbleDir string // where the containers' Pebble sockets are
	// restricted leaves out what Juju's restricted context refuses
	// (is-leader, config-get, the relation tools): see hookScope.
	restricted bool
}

// document reads what the plan asks for and returns the document, and
// whether the unit is the leader (read only when needed: false otherwise).
func (r *reader) document(ctx context.Context) (map[string]any, bool, error) {
	e := r.env
	doc := map[string]any{
		"hook": r.hook(),
		"unit": e.Unit,
		"app":  e.App,
		"model": map[string]any{
			"name": e.ModelName,
			"uuid": e.ModelUUID,
		},
	}
	leader := false
	if (r.plan.wants("leader") || r.plan.app) && !r.restricted {
		var err error
		if leader, err = r.tools.IsLeader(ctx); err != nil {
			return nil, false, err
		}
		doc["leader"] = leader
	}
	if r.plan.wants("config") && !r.restricted {
		cfg, err := r.tools.ConfigGet(ctx)
		if err != nil {
			return nil, false, err
		}
		doc["config"] = cfg
	}
	if len(r.plan.endpoints) > 0 && !r.restricted {
		rels := make(map[string]any, len(r.plan.endpoints))
		for _, ep := range r.plan.endpoints {
			list, err := r.relations(ctx, ep)
			if err != nil {
				return nil, false, err
			}
			rels[ep] = list
		}
		doc["relations"] = rels
	}
	if r.plan.probe {
		doc["containers"] = r.containers(ctx)
	}
	if e.Kind == KindAction {
		action := map[string]any{"name": e.ActionName, "uuid": e.ActionUUID}
		if r.plan.wants("action") {
			params, err := r.tools.ActionGet(ctx)
			if err != nil {
				return nil, false, err
			}
			action["params"] = params
		}
		doc["action"] = action
	}
	return doc, leader, nil
}

// hook returns the document's hook field.
func (r *reader) hook() map[string]any {
	e := r.env
	h := map[string]any{"name": e.Name, "kind": string(e.Kind), "event": rand.Text()}
	set := func(k, v string) {
		if v != "" {
			h[k] = v
		}
	}
	set("endpoint", e.Endpoint())
	if e.Relation != nil {
		h["relation-id"] = e.Relation.ID
	}
	set("remote-unit", e.RemoteUnit)
	set("remote-app", e.RemoteApp)
	set("departing-unit", e.DepartingUnit)
	set("workload", e.Workload)
	set("notice-id", e.NoticeID)
	set("notice-type", e.NoticeType)
	set("notice-key", e.NoticeKey)
	set("check", e.CheckName)
	set("storage-id", e.StorageID)
	set("storage-location", e.StorageLocation)
	set("secret-id", e.SecretID)
	set("secret-label", e.SecretLabel)
	if e.SecretRevision > 0 {
		h["secret-revision"] = e.SecretRevision
	}
	set("meter-status", e.MeterStatus)
	set("meter-info", e.MeterInfo)
	return h
}

// relations reads the relations on an endpoint, leaving out the one being
// broken: during <endpoint>-relation-broken it is gone, whether or not
// relation-ids still lists it (older Juju lists it, newer Juju does not),
// as ops treats it.
func (r *reader) relations(ctx context.Context, endpoint string) ([]any, error) {
	ids, err := r.tools.RelationIDs(ctx, endpoint)
	if err != nil {
		return nil, err
	}
	e := r.env
	list := []any{}
	for _, id := range ids {
		current := e.Relation != nil && e.Relation.Endpoint == endpoint && e.Relation.ID == id
		if current && e.Kind == KindRelationBroken {
			continue
		}
		// A dead relation reads as empty (see deadRelation).
		units, err := orEmpty(r.tools.RelationList(ctx, id))
		if err != nil {
			return nil, err
		}
		// The remote application is named by the hook's context or by any
		// remote unit ("pg/0" belongs to "pg"); relation-list --app only
		// when neither is at hand.
		app := ""
		if current {
			app = e.RemoteApp
		}
		if app == "" && len(units) > 0 {
			app, _ = unitApp(units[0])
		}
		if app == "" {
			if app, err = orEmpty(r.tools.RelationListApp(ctx, id)); err != nil {
				return nil, err
			}
		}
		appData := map[string]any{}
		if app != "" {
			d, err := orEmpty(r.tools.RelationGetApp(ctx, id, app))
			if err != nil {
				return nil, err
			}
			appData = anyMap(d)
		}
		unitData := make(map[string]any, len(units))
		for _, u := range units {
			d, err := orEmpty(r.tools.RelationGet(ctx, id, u))
			if err != nil {
				return nil, err
			}
			unitData[u] = anyMap(d)
		}
		list = append(list, map[string]any{"id": id, "app": app, "units": unitData, "app-data": appData})
	}
	return list, nil
}

// anyMap returns m as the map[string]any a document holds.
func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
