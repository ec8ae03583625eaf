package juju

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// Juju's workload status words, as status-set accepts and status-get prints
// them. StatusUnknown and StatusError are only ever read, never set.
const (
	StatusActive      = "active"
	StatusWaiting     = "waiting"
	StatusMaintenance = "maintenance"
	StatusBlocked     = "blocked"
	StatusUnknown     = "unknown"
	StatusError       = "error"
)

// Log levels accepted by juju-log.
const (
	LogTrace   = "TRACE"
	LogDebug   = "DEBUG"
	LogInfo    = "INFO"
	LogWarning = "WARNING"
	LogError   = "ERROR"
)

// Limits that Juju enforces or that [Tools] applies before calling a tool.
const (
	// MaxStatusMessage is the length in bytes to which [Tools.StatusSet]
	// shortens a status message (on a UTF-8 boundary, ending in "…").
	MaxStatusMessage = 1024
	// MaxStateKey is the longest key state-set accepts, in bytes.
	MaxStateKey = 256
	// MaxStateValue is the longest value state-set accepts, in bytes.
	MaxStateValue = 64 << 10
)

// StatusInfo is one workload status as status-get prints it.
type StatusInfo struct {
	Status  string         `json:"status"`
	Message string         `json:"message"`
	Data    map[string]any `json:"status-data,omitempty"`
}

// AppStatusInfo is the application status as status-get --application
// prints it: the application's own status and each unit's, by unit name.
type AppStatusInfo struct {
	StatusInfo
	Units map[string]StatusInfo `json:"units"`
}

// Tools calls Juju's hook tools through a [Runner], one method per tool,
// with the argument syntax Juju documents. The zero value runs the tools as
// processes found in PATH ([ExecRunner]). A Tools is safe for concurrent use
// when its Runner is.
//
// Every method returns the Runner's error unchanged when the tool fails (a
// [*ToolError] names the tool, exit code and message), and an error naming
// the bad input when an argument is rejected before the tool runs.
type Tools struct {
	// Runner runs the tools; nil means ExecRunner{}.
	Runner Runner

	// hook is the hook environment of the Tools [Run] makes (those of
	// [FromContext]), for the arguments Juju defaults from the hook's
	// context; nil for Tools made otherwise.
	hook *Env
}

func (t Tools) run(ctx context.Context, name string, args []string, stdin []byte) ([]byte, error) {
	r := t.Runner
	if r == nil {
		r = ExecRunner{}
	}
	return r.Run(ctx, name, args, stdin)
}

// runJSON runs a tool and decodes its JSON output into v.
func (t Tools) runJSON(ctx context.Context, v any, name string, args ...string) error {
	out, err := t.run(ctx, name, args, nil)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(out)) == 0 {
		return nil // some tools print nothing for an empty result
	}
	if err := json.Unmarshal(out, v); err != nil {
		return fmt.Errorf("juju: %s: parsing output: %w", name, err)
	}
	return nil
}

// StatusSet sets the unit's workload status: status-set -- <level> <message>.
// level is one of [StatusMaintenance], [StatusBlocked], [StatusWaiting] or
// [StatusActive]; the message is cleaned with [CleanMessage] (NUL bytes
// dropped, invalid UTF-8 replaced, trimmed, shortened to
// [MaxStatusMessage]).
func (t Tools) StatusSet(ctx context.Context, level, message string) error {
	return t.statusSet(ctx, false, level, message)
}

// StatusSetApp sets the application's status (status-set --application);
// Juju allows it only on the leader unit.
func (t Tools) StatusSetApp(ctx context.Context, level, message string) error {
	return t.statusSet(ctx, true, level, message)
}

func (t Tools) statusSet(ctx context.Context, app bool, level, message string) error {
	switch level {
	case StatusMaintenance, StatusBlocked, StatusWaiting, StatusActive:
	default:
		return fmt.Errorf("juju: invalid status level %q (want maintenance, blocked, waiting or active)", level)
	}
	var args []string
	if app {
		args = append(args, "--application")
	}
	// "--" keeps a message that starts with "-" from being read as a flag.
	args = append(args, "--", level, CleanMessage(message))
	_, err := t.run(ctx, "status-set", args, nil)
	return err
}

// TruncateMessage shortens s to at most n bytes without splitting a UTF-8
// sequence, ending a shortened message with "…". It returns s unchanged when
// it already fits.
func TruncateMessage(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := max(n-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if n < len(ellipsis) {
		return s[:cut]
	}
	return s[:cut] + ellipsis
}

// StatusGet reads the unit's workload status:
// status-get --include-data --format=json.
func (t Tools) StatusGet(ctx context.Context) (StatusInfo, error) {
	var st StatusInfo
	err := t.runJSON(ctx, &st, "status-get", "--include-data", "--format=json")
	return st, err
}

// StatusGetApp reads the application status and its units' statuses:
// status-get --include-data --format=json --application. Juju allows it only
// on the leader unit.
func (t Tools) StatusGetApp(ctx context.Context) (AppStatusInfo, error) {
	var out struct {
		App AppStatusInfo `json:"application-status"`
	}
	err := t.runJSON(ctx, &out, "status-get", "--include-data", "--format=json", "--application")
	return out.App, err
}

// StateGet reads all of the unit's server-side state: state-get --format=json.
func (t Tools) StateGet(ctx context.Context) (map[string]string, error) {
	m := map[string]string{}
	if err := t.runJSON(ctx, &m, "state-get", "--format=json"); err != nil {
		return nil, err
	}
	if m == nil { // the tool printed null
		m = map[string]string{}
	}
	return m, nil
}

// StateGetKey reads one key of the unit's server-side state:
// state-get --format=json -- <key>. A missing key reads as "".
func (t Tools) StateGetKey(ctx context.Context, key string) (string, error) {
	var v *string
	if err := t.runJSON(ctx, &v, "state-get", "--format=json", "--", key); err != nil {
		return "", err
	}
	if v == nil {
		return "", nil
	}
	return *v, nil
}

// StateSet stores values in the unit's server-side state: state-set --file -
// with the map on standard input. Juju applies it only if the hook exits 0.
// Keys must be non-empty and at most [MaxStateKey] bytes, values at most
// [MaxStateValue] bytes.
func (t Tools) StateSet(ctx context.Context, values map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(values)) {
		switch {
		case k == "":
			return errors.New("juju: state-set: empty key")
		case len(k) > MaxStateKey:
			return fmt.Errorf("juju: state-set: key %.40q… is %d bytes, more than %d", k, len(k), MaxStateKey)
		case len(values[k]) > MaxStateValue:
			return fmt.Errorf("juju: state-set: value of key %q is %d bytes, more than %d", k, len(values[k]), MaxStateValue)
		}
	}
	_, err := t.run(ctx, "state-set", []string{"--file", "-"}, encodeSettings(values))
	return err
}

// StateDelete removes one key from the unit's server-side state:
// state-delete -- <key>. Juju applies it only if the hook exits 0.
func (t Tools) StateDelete(ctx context.Context, key string) error {
	_, err := t.run(ctx, "state-delete", []string{"--", key}, nil)
	return err
}

// IsLeader reports whether the unit is the application's leader:
// is-leader --format=json.
func (t Tools) IsLeader(ctx context.Context) (bool, error) {
	var b bool
	err := t.runJSON(ctx, &b, "is-leader", "--format=json")
	return b, err
}

// ConfigGet reads the application's configuration: config-get --format=json.
// Values are strings, bools, int64 for integers (exact above 2^53) and
// float64 for other numbers.
func (t Tools) ConfigGet(ctx context.Context) (map[string]any, error) {
	m := map[string]any{}
	if err := t.runJSONNumbers(ctx, &m, "config-get", "--format=json"); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// RelationIDs lists the ids of the relations on an endpoint, in increasing
// order: relation-ids --format=json <endpoint>.
func (t Tools) RelationIDs(ctx context.Context, endpoint string) ([]int, error) {
	var names []string
	if err := t.runJSON(ctx, &names, "relation-ids", "--format=json", "--", endpoint); err != nil {
		return nil, err
	}
	ids := make([]int, 0, len(names))
	for _, s := range names {
		id, err := ParseRelationID(s)
		if err != nil {
			return nil, fmt.Errorf("juju: relation-ids: %w", err)
		}
		ids = append(ids, id.ID)
	}
	slices.Sort(ids)
	return ids, nil
}

// RelationList lists the remote units in a relation:
// relation-list --format=json -r <id>.
func (t Tools) RelationList(ctx context.Context, id int) ([]string, error) {
	units := []string{}
	if err := t.runJSON(ctx, &units, "relation-list", "--format=json", "-r", strconv.Itoa(id)); err != nil {
		return nil, err
	}
	if units == nil {
		units = []string{}
	}
	return units, nil
}

// RelationListApp returns the name of the remote application in a relation:
// relation-list --format=json -r <id> --app.
func (t Tools) RelationListApp(ctx context.Context, id int) (string, error) {
	var app string
	err := t.runJSON(ctx, &app, "relation-list", "--format=json", "-r", strconv.Itoa(id), "--app")
	return app, err
}

// RelationGet reads a unit's data in a relation (the local unit's own, or a
// remote unit's): relation-get --format=json -r <id> - <unit>.
func (t Tools) RelationGet(ctx context.Context, id int, unit string) (map[string]string, error) {
	return t.relationGet(ctx, id, unit, false)
}

// RelationGetApp reads an application's data in a relation (the remote
// application's, or the local one's, which Juju shows only to the leader):
// relation-get --format=json -r <id> --app - <app>.
func (t Tools) RelationGetApp(ctx context.Context, id int, app string) (map[string]string, error) {
	return t.relationGet(ctx, id, app, true)
}

func (t Tools) relationGet(ctx context.Context, id int, member string, app bool) (map[string]string, error) {
	args := []string{"--format=json", "-r", strconv.Itoa(id)}
	if app {
		args = append(args, "--app")
	}
	args = append(args, "-", member)
	m := map[string]string{}
	if err := t.runJSON(ctx, &m, "relation-get", args...); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]string{}
	}
	return m, nil
}

// RelationSet writes the local unit's data in a relation:
// relation-set -r <id> --file - with the map on standard input. An empty
// value deletes its key. Juju applies it only if the hook exits 0.
func (t Tools) RelationSet(ctx context.Context, id int, data map[string]string) error {
	return t.relationSet(ctx, id, data, false)
}

// RelationSetApp writes the local application's data in a relation
// (relation-set --app); Juju allows it only on the leader unit.
func (t Tools) RelationSetApp(ctx context.Context, id int, data map[string]string) error {
	return t.relationSet(ctx, id, data, true)
}

func (t Tools) relationSet(ctx context.Context, id int, data map[string]string, app bool) error {
	if _, ok := data[""]; ok {
		return errors.New("juju: relation-set: empty key")
	}
	args := []string{"-r", strconv.Itoa(id)}
	if app {
		args = append(args, "--app")
	}
	args = append(args, "--file", "-")
	_, err := t.run(ctx, "relation-set", args, encodeSettings(data))
	return err
}

// JujuLog writes a message to the unit's log in the controller:
// juju-log --log-level <level> -- <message>. level is one of [LogTrace],
// [LogDebug], [LogInfo], [LogWarning] or [LogError].
func (t Tools) JujuLog(ctx context.Context, level, message string) error {
	_, err := t.run(ctx, "juju-log", []string{"--log-level", level, "--", message}, nil)
	return err
}

// ApplicationVersionSet sets the workload version shown by juju status:
// application-version-set -- <version>.
func (t Tools) ApplicationVersionSet(ctx context.Context, version string) error {
	_, err := t.run(ctx, "application-version-set", []string{"--", version}, nil)
	return err
}

// ActionGet reads the running action's parameters: action-get --format=json.
// Numbers are decoded as [Tools.ConfigGet] decodes them.
func (t Tools) ActionGet(ctx context.Context) (map[string]any, error) {
	m := map[string]any{}
	if err := t.runJSONNumbers(ctx, &m, "action-get", "--format=json"); err != nil {
		return nil, err
	}
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

// actionKey returns Juju's rule for one dot-separated part of an
// action-set key. It is compiled when first used, not when the program
// starts: every hook is a new process, and few set action results.
var actionKey = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$`)
})

// reservedActionKeys are the result keys Juju keeps for itself.
var reservedActionKeys = []string{"stdout", "stdout-encoding", "stderr", "stderr-encoding"}

// ValidActionKey reports an error when key cannot be an action-set key: each
// dot-separated part must be lower-case letters, digits and hyphens, start
// and end with a letter or digit, and not be one of the names Juju reserves
// (stdout, stderr, stdout-encoding, stderr-encoding).
func ValidActionKey(key string) error {
	for part := range strings.SplitSeq(key, ".") {
		if !actionKey().MatchString(part) {
			return fmt.Errorf("juju: invalid action key %q: each dot-separated part must be lower-case letters, digits and hyphens, starting and ending with a letter or digit", key)
		}
		if slices.Contains(reservedActionKeys, part) {
			return fmt.Errorf("juju: invalid action key %q: %q is reserved", key, part)
		}
	}
	return nil
}

// ActionSet adds results to the running action: action-set key=value…, in
// key order. A key may be a dotted path ("backup.size") that nests the
// result; every key must pass [ValidActionKey]. Values may contain anything.
func (t Tools) ActionSet(ctx context.Context, results map[string]string) error {
	keys := slices.Sorted(maps.Keys(results))
	args := make([]string, 0, len(keys))
	for _, k := range keys {
		if err := ValidActionKey(k); err != nil {
			return err
		}
		args = append(args, k+"="+results[k])
	}
	if len(args) == 0 {
		return nil
	}
	_, err := t.run(ctx, "action-set", args, nil)
	return err
}

// ActionFail marks the running action as failed: action-fail -- <message>,
// or plain action-fail (Juju's default message) when message is empty.
func (t Tools) ActionFail(ctx context.Context, message string) error {
	var args []string
	if message != "" {
		args = []string{"--", message}
	}
	_, err := t.run(ctx, "action-fail", args, nil)
	return err
}

// ActionLog sends a progress message to the user running the action:
// action-log -- <message>.
func (t Tools) ActionLog(ctx context.Context, message string) error {
	_, err := t.run(ctx, "action-log", []string{"--", message}, nil)
	return err
}

// encodeSettings encodes a string map for a tool's --file option, in key
// order. The output is JSON written with a space after every ':' and ',', so
// that it is also a YAML flow mapping, which is what Juju parses; strings
// escape what YAML refuses (see appendYAMLString).
func encodeSettings(m map[string]string) []byte {
	b := []byte{'{'}
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			b = append(b, ", "...)
		}
		b = appendYAMLString(b, k)
		b = append(b, ": "...)
		b = appendYAMLString(b, m[k])
	}
	return append(b, "}\n"...)
}

// RelationID is a relation as Juju names it in JUJU_RELATION_ID and prints
// it in relation-ids: the local endpoint and the relation's number.
type RelationID struct {
	Endpoint string
	ID       int
}

// String returns the "endpoint:id" form.
func (r RelationID) String() string { return r.Endpoint + ":" + strconv.Itoa(r.ID) }

// ParseRelationID parses Juju's "endpoint:id" form, such as "db:7".
func ParseRelationID(s string) (RelationID, error) {
	ep, num, ok := strings.Cut(s, ":")
	if !ok || ep == "" || strings.Contains(num, ":") {
		return RelationID{}, fmt.Errorf("juju: invalid relation id %q (want endpoint:number)", s)
	}
	id, err := strconv.Atoi(num)
	if err != nil || id < 0 || num != strconv.Itoa(id) {
		return RelationID{}, fmt.Errorf("juju: invalid relation id %q (want endpoint:number)", s)
	}
	return RelationID{Endpoint: ep, ID: id}, nil
}
