package juju

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Kind is the kind of a hook, spelled as Juju spells it. Relation, storage
// and workload hooks are named after an endpoint, a storage or a container
// followed by their kind ("db-relation-joined" has kind [KindRelationJoined]).
// The zero value, KindUnknown, is a hook name this package does not know.
type Kind string

// The kinds of hooks Juju runs, and KindAction for an action.
const (
	KindUnknown               Kind = ""
	KindInstall               Kind = "install"
	KindStart                 Kind = "start"
	KindStop                  Kind = "stop"
	KindRemove                Kind = "remove"
	KindConfigChanged         Kind = "config-changed"
	KindUpgradeCharm          Kind = "upgrade-charm"
	KindUpdateStatus          Kind = "update-status"
	KindLeaderElected         Kind = "leader-elected"
	KindLeaderSettingsChanged Kind = "leader-settings-changed"
	KindCollectMetrics        Kind = "collect-metrics"
	KindMeterStatusChanged    Kind = "meter-status-changed"
	KindPreSeriesUpgrade      Kind = "pre-series-upgrade"
	KindPostSeriesUpgrade     Kind = "post-series-upgrade"
	KindRelationCreated       Kind = "relation-created"
	KindRelationJoined        Kind = "relation-joined"
	KindRelationChanged       Kind = "relation-changed"
	KindRelationDeparted      Kind = "relation-departed"
	KindRelationBroken        Kind = "relation-broken"
	KindStorageAttached       Kind = "storage-attached"
	KindStorageDetaching      Kind = "storage-detaching"
	KindPebbleReady           Kind = "pebble-ready"
	KindPebbleCustomNotice    Kind = "pebble-custom-notice"
	KindPebbleCheckFailed     Kind = "pebble-check-failed"
	KindPebbleCheckRecovered  Kind = "pebble-check-recovered"
	KindSecretChanged         Kind = "secret-changed"
	KindSecretExpired         Kind = "secret-expired"
	KindSecretRemove          Kind = "secret-remove"
	KindSecretRotate          Kind = "secret-rotate"
	KindAction                Kind = "action"
)

// unitKinds are the hooks whose name is their kind.
var unitKinds = []Kind{
	KindInstall, KindStart, KindStop, KindRemove, KindConfigChanged,
	KindUpgradeCharm, KindUpdateStatus, KindLeaderElected,
	KindLeaderSettingsChanged, KindCollectMetrics, KindMeterStatusChanged, KindPreSeriesUpgrade,
	KindPostSeriesUpgrade, KindSecretChanged, KindSecretExpired,
	KindSecretRemove, KindSecretRotate,
}

// prefixedKinds are the hooks named "<prefix>-<kind>".
var prefixedKinds = []Kind{
	KindRelationCreated, KindRelationJoined, KindRelationChanged,
	KindRelationDeparted, KindRelationBroken, KindStorageAttached,
	KindStorageDetaching, KindPebbleReady, KindPebbleCustomNotice,
	KindPebbleCheckFailed, KindPebbleCheckRecovered,
}

// IsRelation reports whether k is one of the relation hook kinds.
func (k Kind) IsRelation() bool { return strings.HasPrefix(string(k), "relation-") }

// IsStorage reports whether k is one of the storage hook kinds.
func (k Kind) IsStorage() bool { return strings.HasPrefix(string(k), "storage-") }

// IsWorkload reports whether k is one of the workload (Pebble) hook kinds.
func (k Kind) IsWorkload() bool { return strings.HasPrefix(string(k), "pebble-") }

// IsSecret reports whether k is one of the secret hook kinds.
func (k Kind) IsSecret() bool { return strings.HasPrefix(string(k), "secret-") }

// IsRestricted reports whether Juju runs hooks of kind k in its restricted
// context, where only a few hook tools work: collect-metrics (add-metric
// and juju-log) and meter-status-changed (juju-log). Every other tool,
// config-get, state-get, status-set, is-leader and the relation tools
// among them, fails with "not implemented for restricted context".
func (k Kind) IsRestricted() bool { return k == KindCollectMetrics || k == KindMeterStatusChanged }

// ErrMissingEnv is wrapped by the error [ParseEnv] returns when a variable
// the hook needs is not set.
var ErrMissingEnv = errors.New("juju: missing hook environment")

// Env is the hook environment of one charm invocation: what runs (a hook or
// an action), for which unit, and the variables that kind of hook carries.
// Fields a hook does not carry are empty.
type Env struct {
	// DispatchPath is JUJU_DISPATCH_PATH ("hooks/install", "actions/backup"),
	// or the path derived from the program name when Juju did not set it.
	DispatchPath string
	// Name is the hook's name ("install", "db-relation-joined") or, for an
	// action, the action's name.
	Name string
	// Kind classifies the hook; KindAction for an action.
	Kind Kind
	// Unit is JUJU_UNIT_NAME ("app/0"); App is its application ("app").
	Unit, App string
	// ModelName, ModelUUID, CharmDir and Version are JUJU_MODEL_NAME,
	// JUJU_MODEL_UUID, JUJU_CHARM_DIR and JUJU_VERSION.
	ModelName, ModelUUID, CharmDir, Version string

	// Relation is JUJU_RELATION_ID, parsed; nil when it is not set (it is set
	// for every relation hook).
	Relation *RelationID
	// RemoteUnit and RemoteApp are JUJU_REMOTE_UNIT and JUJU_REMOTE_APP
	// (RemoteApp is derived from RemoteUnit when Juju left it empty);
	// DepartingUnit is JUJU_DEPARTING_UNIT.
	RemoteUnit, RemoteApp, DepartingUnit string

	// ActionName and ActionUUID are JUJU_ACTION_NAME and JUJU_ACTION_UUID.
	ActionName, ActionUUID string

	// Workload is JUJU_WORKLOAD_NAME, the container of a Pebble hook.
	Workload string
	// NoticeID, NoticeType and NoticeKey are JUJU_NOTICE_ID,
	// JUJU_NOTICE_TYPE and JUJU_NOTICE_KEY (pebble-custom-notice).
	NoticeID, NoticeType, NoticeKey string
	// CheckName is JUJU_PEBBLE_CHECK_NAME (pebble-check-failed/-recovered).
	CheckName string

	// StorageID and StorageLocation are JUJU_STORAGE_ID ("data/0") and
	// JUJU_STORAGE_LOCATION.
	StorageID, StorageLocation string

	// SecretID and SecretLabel are JUJU_SECRET_ID and JUJU_SECRET_LABEL.
	SecretID, SecretLabel string
	// SecretRevision is JUJU_SECRET_REVISION, 0 when it is not set.
	SecretRevision int

	// MeterStatus and MeterInfo are JUJU_METER_STATUS ("GREEN", "AMBER",
	// "RED") and JUJU_METER_INFO (meter-status-changed).
	MeterStatus, MeterInfo string
}

// Endpoint returns the relation endpoint of a relation hook, the storage
// name of a storage hook and the container of a workload hook: the part of
// the hook name before its kind. It is empty for other hooks.
func (e *Env) Endpoint() string {
	if slices.Contains(prefixedKinds, e.Kind) {
		return strings.TrimSuffix(e.Name, "-"+string(e.Kind))
	}
	return ""
}

// ParseEnv reads the hook environment through getenv (typically
// [os.Getenv]; an empty value counts as unset) and argv0, the program name
// (os.Args[0]), which names the hook when JUJU_DISPATCH_PATH is not set (a
// charm installed as hooks/<name> symlinks). JUJU_DISPATCH_PATH is
// hooks/<name> or actions/<name> as Juju sets it, or an absolute path
// (`juju exec` with a JUJU_DISPATCH_PATH of the user's), whose last element
// names the hook, or the action when its directory is "actions", as ops
// takes it.
//
// It fails, naming the variable, when a variable is malformed or when one
// that every hook or this kind of hook needs is missing: JUJU_UNIT_NAME
// always; JUJU_RELATION_ID for relation hooks and JUJU_REMOTE_UNIT for
// relation-joined and relation-departed; JUJU_ACTION_NAME for actions;
// JUJU_WORKLOAD_NAME for Pebble hooks (and the notice or check variables for
// their kinds); JUJU_STORAGE_ID for storage hooks; JUJU_SECRET_ID for secret
// hooks and JUJU_SECRET_REVISION for secret-expired and secret-remove.
//
// A hook name it does not recognise is not an error, because Juju adds
// hooks over time: the Env has KindUnknown and the caller decides.
func ParseEnv(getenv func(string) string, argv0 string) (*Env, error) {
	e := &Env{
		Unit:            getenv("JUJU_UNIT_NAME"),
		ModelName:       getenv("JUJU_MODEL_NAME"),
		ModelUUID:       getenv("JUJU_MODEL_UUID"),
		CharmDir:        getenv("JUJU_CHARM_DIR"),
		Version:         getenv("JUJU_VERSION"),
		RemoteUnit:      getenv("JUJU_REMOTE_UNIT"),
		RemoteApp:       getenv("JUJU_REMOTE_APP"),
		DepartingUnit:   getenv("JUJU_DEPARTING_UNIT"),
		ActionName:      getenv("JUJU_ACTION_NAME"),
		ActionUUID:      getenv("JUJU_ACTION_UUID"),
		Workload:        getenv("JUJU_WORKLOAD_NAME"),
		NoticeID:        getenv("JUJU_NOTICE_ID"),
		NoticeType:      getenv("JUJU_NOTICE_TYPE"),
		NoticeKey:       getenv("JUJU_NOTICE_KEY"),
		CheckName:       getenv("JUJU_PEBBLE_CHECK_NAME"),
		StorageID:       getenv("JUJU_STORAGE_ID"),
		StorageLocation: getenv("JUJU_STORAGE_LOCATION"),
		SecretID:        getenv("JUJU_SECRET_ID"),
		SecretLabel:     getenv("JUJU_SECRET_LABEL"),
		MeterStatus:     getenv("JUJU_METER_STATUS"),
		MeterInfo:       getenv("JUJU_METER_INFO"),
	}
	if err := e.parseDispatch(getenv("JUJU_DISPATCH_PATH"), argv0); err != nil {
		return nil, err
	}
	if e.Unit != "" {
		app, err := unitApp(e.Unit)
		if err != nil {
			return nil, fmt.Errorf("juju: JUJU_UNIT_NAME: %w", err)
		}
		e.App = app
	}
	if s := getenv("JUJU_RELATION_ID"); s != "" {
		id, err := ParseRelationID(s)
		if err != nil {
			return nil, fmt.Errorf("juju: JUJU_RELATION_ID: %w", err)
		}
		e.Relation = &id
	}
	if e.RemoteApp == "" && e.RemoteUnit != "" {
		app, err := unitApp(e.RemoteUnit)
		if err != nil {
			return nil, fmt.Errorf("juju: JUJU_REMOTE_UNIT: %w", err)
		}
		e.RemoteApp = app
	}
	if s := getenv("JUJU_SECRET_REVISION"); s != "" {
		rev, err := strconv.Atoi(s)
		if err != nil || rev < 0 {
			return nil, fmt.Errorf("juju: JUJU_SECRET_REVISION: invalid revision %q", s)
		}
		e.SecretRevision = rev
	}
	if err := e.checkRequired(getenv); err != nil {
		return nil, err
	}
	if err := e.checkConsistent(getenv("JUJU_RELATION")); err != nil {
		return nil, err
	}
	return e, nil
}

// parseDispatch sets DispatchPath, Name and Kind from JUJU_DISPATCH_PATH or,
// without it, from the program name.
func (e *Env) parseDispatch(dispatch, argv0 string) error {
	if dispatch == "" {
		base := filepath.Base(argv0)
		if argv0 == "" || base == "dispatch" || base == "." || base == "/" {
			return fmt.Errorf("%w: JUJU_DISPATCH_PATH is not set and the program name %q does not name a hook", ErrMissingEnv, argv0)
		}
		dir := "hooks"
		if filepath.Base(filepath.Dir(argv0)) == "actions" {
			dir = "actions"
		}
		dispatch = dir + "/" + base
	}
	dir, name, ok := strings.Cut(dispatch, "/")
	if strings.HasPrefix(dispatch, "/") {
		// An absolute path, as `juju exec` users set to fire an event of
		// their own: its last element names it, as ops takes it.
		name, dir = filepath.Base(dispatch), filepath.Base(filepath.Dir(dispatch))
		ok = name != "/" && name != "." && name != ".."
		if dir != "actions" {
			dir = "hooks"
		}
	}
	if !ok || name == "" || strings.Contains(name, "/") || (dir != "hooks" && dir != "actions") {
		return fmt.Errorf("juju: JUJU_DISPATCH_PATH: %q is neither hooks/<name>, actions/<name> nor an absolute path", dispatch)
	}
	e.DispatchPath, e.Name = dispatch, name
	if dir == "actions" {
		e.Kind = KindAction
	} else {
		e.Kind = HookKind(name)
	}
	return nil
}

// HookKind returns the kind of the hook called name ("db-relation-joined"
// has kind [KindRelationJoined]), or KindUnknown for a name this package
// does not know. Action names have no kind of their own: an action is
// [KindAction] by being dispatched as actions/<name>.
func HookKind(name string) Kind {
	if k := Kind(name); slices.Contains(unitKinds, k) {
		return k
	}
	for _, k := range prefixedKinds {
		if prefix, ok := strings.CutSuffix(name, "-"+string(k)); ok && prefix != "" {
			return k
		}
	}
	return KindUnknown
}

// checkRequired fails naming every variable the hook needs that is unset.
func (e *Env) checkRequired(getenv func(string) string) error {
	need := []string{"JUJU_UNIT_NAME"}
	switch e.Kind {
	case KindAction:
		need = append(need, "JUJU_ACTION_NAME")
	case KindRelationCreated, KindRelationChanged, KindRelationBroken:
		need = append(need, "JUJU_RELATION_ID")
	case KindRelationJoined, KindRelationDeparted:
		need = append(need, "JUJU_RELATION_ID", "JUJU_REMOTE_UNIT")
	case KindStorageAttached, KindStorageDetaching:
		need = append(need, "JUJU_STORAGE_ID")
	case KindPebbleReady:
		need = append(need, "JUJU_WORKLOAD_NAME")
	case KindPebbleCustomNotice:
		need = append(need, "JUJU_WORKLOAD_NAME", "JUJU_NOTICE_ID", "JUJU_NOTICE_TYPE", "JUJU_NOTICE_KEY")
	case KindPebbleCheckFailed, KindPebbleCheckRecovered:
		need = append(need, "JUJU_WORKLOAD_NAME", "JUJU_PEBBLE_CHECK_NAME")
	case KindSecretChanged, KindSecretRotate:
		need = append(need, "JUJU_SECRET_ID")
	case KindSecretExpired, KindSecretRemove:
		need = append(need, "JUJU_SECRET_ID", "JUJU_SECRET_REVISION")
	}
	var missing []string
	for _, v := range need {
		if getenv(v) == "" {
			missing = append(missing, v)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	what := fmt.Sprintf("hook %q", e.Name)
	if e.Kind == KindAction {
		what = fmt.Sprintf("action %q", e.Name)
	}
	return fmt.Errorf("%w: %s needs %s", ErrMissingEnv, what, strings.Join(missing, ", "))
}

// checkConsistent fails when variables contradict the hook name.
func (e *Env) checkConsistent(relation string) error {
	switch {
	case e.Kind == KindAction && e.ActionName != e.Name:
		return fmt.Errorf("juju: JUJU_ACTION_NAME %q does not match the dispatched action %q", e.ActionName, e.Name)
	case e.Kind.IsRelation() && e.Relation.Endpoint != e.Endpoint():
		return fmt.Errorf("juju: JUJU_RELATION_ID %q does not belong to endpoint %q of hook %q", e.Relation, e.Endpoint(), e.Name)
	case e.Kind.IsRelation() && relation != "" && relation != e.Endpoint():
		return fmt.Errorf("juju: JUJU_RELATION %q does not match endpoint %q of hook %q", relation, e.Endpoint(), e.Name)
	case e.Kind.IsWorkload() && e.Workload != e.Endpoint():
		return fmt.Errorf("juju: JUJU_WORKLOAD_NAME %q does not match container %q of hook %q", e.Workload, e.Endpoint(), e.Name)
	}
	return nil
}

// unitApp returns the application of a unit name such as "app/0".
func unitApp(unit string) (string, error) {
	app, num, ok := strings.Cut(unit, "/")
	if ok && app != "" {
		if n, err := strconv.Atoi(num); err == nil && n >= 0 && strconv.Itoa(n) == num {
			return app, nil
		}
	}
	return "", fmt.Errorf("invalid unit name %q (want application/number)", unit)
}

// Vars returns the hook environment Juju would set for e: the inverse of
// [ParseEnv], for harnesses that run a charm as Juju does. Empty fields are
// left out. JUJU_DISPATCH_PATH is DispatchPath or, when that is empty,
// hooks/<Name> (actions/<Name> for an action); JUJU_RELATION is the
// endpoint of a relation hook.
func (e *Env) Vars() map[string]string {
	v := map[string]string{}
	set := func(name, value string) {
		if value != "" {
			v[name] = value
		}
	}
	dispatch := e.DispatchPath
	if dispatch == "" && e.Name != "" {
		dispatch = "hooks/" + e.Name
		if e.Kind == KindAction {
			dispatch = "actions/" + e.Name
		}
	}
	set("JUJU_DISPATCH_PATH", dispatch)
	set("JUJU_UNIT_NAME", e.Unit)
	set("JUJU_MODEL_NAME", e.ModelName)
	set("JUJU_MODEL_UUID", e.ModelUUID)
	set("JUJU_CHARM_DIR", e.CharmDir)
	set("JUJU_VERSION", e.Version)
	if e.Relation != nil {
		set("JUJU_RELATION_ID", e.Relation.String())
		set("JUJU_RELATION", e.Relation.Endpoint)
	}
	set("JUJU_REMOTE_UNIT", e.RemoteUnit)
	set("JUJU_REMOTE_APP", e.RemoteApp)
	set("JUJU_DEPARTING_UNIT", e.DepartingUnit)
	set("JUJU_ACTION_NAME", e.ActionName)
	set("JUJU_ACTION_UUID", e.ActionUUID)
	set("JUJU_WORKLOAD_NAME", e.Workload)
	set("JUJU_NOTICE_ID", e.NoticeID)
	set("JUJU_NOTICE_TYPE", e.NoticeType)
	set("JUJU_NOTICE_KEY", e.NoticeKey)
	set("JUJU_PEBBLE_CHECK_NAME", e.CheckName)
	set("JUJU_STORAGE_ID", e.StorageID)
	set("JUJU_STORAGE_LOCATION", e.StorageLocation)
	set("JUJU_SECRET_ID", e.SecretID)
	set("JUJU_SECRET_LABEL", e.SecretLabel)
	if e.SecretRevision > 0 {
		v["JUJU_SECRET_REVISION"] = strconv.Itoa(e.SecretRevision)
	}
	set("JUJU_METER_STATUS", e.MeterStatus)
	set("JUJU_METER_INFO", e.MeterInfo)
	return v
}
