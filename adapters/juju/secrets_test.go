package juju_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
)

// secretValue is secret content that must never leave the model.
const secretValue = "hunter2-Zq9"

// TestSecretsOffline tests a charm's secret handlers offline, state in and
// state out: install makes and grants a secret (on the leader, owned by
// the application), secret-rotate makes a new revision, secret-remove
// removes the revision no one tracks, and a failed hook makes nothing.
func TestSecretsOffline(t *testing.T) {
	c := charm(
		handler{"issue", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			tools := juju.FromContext(ctx).Tools
			id, err := tools.SecretAdd(ctx, juju.SecretContent{"password": secretValue}, &juju.SecretOptions{Label: "db-password", Rotate: "monthly"})
			if err != nil {
				return opbus.Status{}, err
			}
			ev.SetValue("secret", id) // the ID, never the content
			return opbus.Active(""), tools.SecretGrant(ctx, id, 3, "")
		}, opbus.On{Fields: []string{"hook.event"}, When: juju.OnHook("install").When}},
		handler{"rotate", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			return opbus.Status{}, juju.FromContext(ctx).Tools.SecretSet(ctx, d.Hook.SecretID, juju.SecretContent{"password": secretValue + "-2"}, nil)
		}, juju.OnHook("secret-rotate")},
		handler{"prune", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			d, err := juju.DocumentOf(ev)
			if err != nil {
				return opbus.Status{}, err
			}
			return opbus.Status{}, juju.FromContext(ctx).Tools.SecretRemove(ctx, d.Hook.SecretID, d.Hook.SecretRevision)
		}, juju.OnHook("secret-remove")},
	)
	m := run(t, c, "install", newModel())
	if len(m.Secrets) != 1 {
		t.Fatalf("secrets %v", m.Secrets)
	}
	s := m.Secrets[0]
	if s.Owner != juju.SecretOwnerApplication || s.Label != "db-password" || s.Rotate != "monthly" ||
		!reflect.DeepEqual(s.Contents, map[int]map[string]string{1: {"password": secretValue}}) ||
		!reflect.DeepEqual(s.Grants, []jujutest.SecretGrant{{Relation: 3, App: "pg"}}) {
		t.Errorf("secret %+v", s)
	}
	if strings.Contains(fmt.Sprint(m.State), secretValue) || !strings.Contains(m.State[juju.DefaultStateKey], s.ID) {
		t.Errorf("state %q: want the secret's ID and never its content", m.State)
	}

	m = run(t, c, "secret-rotate", m)
	if got := m.Secrets[0].Latest(); got != 2 {
		t.Errorf("after secret-rotate the latest revision is %d, want 2", got)
	}
	tools := juju.Tools{Runner: jujutest.NewRunner(m)}
	info, err := tools.SecretInfoGet(context.Background(), "", "db-password")
	if err != nil || info.ID != s.ID || info.Revision != 2 || info.Owner != "application" ||
		!reflect.DeepEqual(info.Access, []juju.SecretAccess{{Target: "application-pg", Scope: "relation-3", Role: "view"}}) {
		t.Errorf("secret-info-get: %+v, %v", info, err)
	}
	if ids, err := tools.SecretIDs(context.Background()); err != nil || !reflect.DeepEqual(ids, []string{s.ID}) {
		t.Errorf("secret-ids: %v, %v", ids, err)
	}

	e := juju.Env{Name: "secret-remove", SecretID: s.ID, SecretLabel: s.Label, SecretRevision: 1}
	m, err = c.RunEnv(context.Background(), e, m)
	if err != nil {
		t.Fatal(err)
	}
	if _, found := m.Secrets[0].Contents[1]; found || len(m.Secrets[0].Contents) != 1 {
		t.Errorf("after secret-remove of revision 1: %v", m.Secrets[0].Contents)
	}

	// A hook that fails makes no secret: Juju discards its changes.
	failing := charm(handler{"h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		_, err := juju.FromContext(ctx).Tools.SecretAdd(ctx, juju.SecretContent{"token": "x"}, nil)
		return opbus.Status{}, errors.Join(err, errors.New("later failure"))
	}, juju.OnHook()})
	out, err := failing.Run(context.Background(), "start", m)
	if err == nil || len(out.Secrets) != 1 {
		t.Errorf("failed hook: err %v, secrets %d, want the one from before", err, len(out.Secrets))
	}
}

// TestSecretObserver reads a secret another application granted: the
// revision first read is kept until --refresh; --peek reads the latest
// once; a label given with the ID names the secret for later reads.
func TestSecretObserver(t *testing.T) {
	m := &jujutest.Model{Unit: "web/0", Secrets: []jujutest.Secret{{
		ID:       "secret:d1rlhpo4ks0c73b1n6q0",
		Contents: map[int]map[string]string{1: {"token": "one"}, 2: {"token": "two"}},
		Tracked:  1,
	}}}
	r := jujutest.NewRunner(m)
	tools := juju.Tools{Runner: r}
	ctx := context.Background()
	get := func(id string, o *juju.SecretGetOptions) string {
		t.Helper()
		c, err := tools.SecretGet(ctx, id, o)
		if err != nil {
			t.Fatalf("secret-get %s %+v: %v", id, o, err)
		}
		return c["token"]
	}
	id := m.Secrets[0].ID
	if got := get(id, &juju.SecretGetOptions{Label: "upstream"}); got != "one" {
		t.Errorf("tracked read: %q, want one", got)
	}
	if got := get("", &juju.SecretGetOptions{Label: "upstream", Peek: true}); got != "two" {
		t.Errorf("--peek by label: %q, want two", got)
	}
	if got := get(id, nil); got != "one" {
		t.Errorf("after --peek: %q, want one (peek does not track)", got)
	}
	if got := get(id, &juju.SecretGetOptions{Refresh: true}); got != "two" {
		t.Errorf("--refresh: %q, want two", got)
	}
	if got := get(id, nil); got != "two" {
		t.Errorf("after --refresh: %q, want two", got)
	}
	if _, err := tools.SecretGet(ctx, id, &juju.SecretGetOptions{Peek: true, Refresh: true}); err == nil {
		t.Error("Peek and Refresh together: no error")
	}
	if err := tools.SecretSet(ctx, id, juju.SecretContent{"token": "mine"}, nil); err == nil {
		t.Error("secret-set on an observed secret: no error")
	}
	if _, err := tools.SecretInfoGet(ctx, id, ""); err == nil {
		t.Error("secret-info-get on an observed secret: no error")
	}
	if c, err := tools.SecretGet(ctx, "secret:nope", nil); err == nil {
		t.Errorf("unknown secret: got %v", c)
	}
}

// TestSecretContentNeverLogged runs a charm that handles secret content
// with every log level enabled, logs the content as it should not, and
// fails: no log line (juju-log or standard error), error, tool call
// argument or stored state holds a value, and the file that carries the
// content to secret-add is gone.
func TestSecretContentNeverLogged(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	var stderr bytes.Buffer
	for _, fail := range []bool{false, true} {
		c := charm(handler{"h", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
			h := juju.FromContext(ctx)
			content := juju.SecretContent{"password": secretValue}
			id, err := h.Tools.SecretAdd(ctx, content, &juju.SecretOptions{Owner: juju.SecretOwnerUnit})
			if err != nil {
				return opbus.Status{}, err
			}
			got, err := h.Tools.SecretGet(ctx, id, nil)
			if err != nil {
				return opbus.Status{}, err
			}
			for _, level := range []slog.Level{slog.LevelDebug - 4, slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError} {
				h.Logger.Log(ctx, level, fmt.Sprintf("got %v %+v %#v %s", got, got, got, got), "content", got, "map", map[string]any{"c": got})
			}
			_, err = h.Tools.SecretGet(ctx, "", &juju.SecretGetOptions{Label: "missing"})
			h.Logger.Error("lookup failed", "err", err)
			if fail {
				return opbus.Status{}, fmt.Errorf("handling %v: %w", got, err)
			}
			return opbus.Active(fmt.Sprint(got)), nil
		}, juju.OnHook()})
		c.Options = &juju.Options{Endpoints: endpoints.Endpoints, LogLevel: slog.LevelDebug - 8, Stderr: &stderr}
		m, err := c.Run(context.Background(), "start", newModel())
		if (err != nil) != fail {
			t.Fatalf("fail=%v: err %v", fail, err)
		}
		leaks := []string{stderr.String(), fmt.Sprint(m.Logs), fmt.Sprint(m.Calls), fmt.Sprint(m.State), fmt.Sprint(m.UnitStatus)}
		if err != nil {
			leaks = append(leaks, err.Error())
		}
		for _, s := range leaks {
			if strings.Contains(s, secretValue) {
				t.Errorf("fail=%v: the secret's content leaked: %q", fail, s)
			}
		}
		if n := len(m.Logs); n < 6 || !strings.Contains(fmt.Sprint(m.Logs), "password: redacted") {
			t.Errorf("fail=%v: %d log lines %q, want every level, naming the key", fail, n, m.Logs)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("content files left behind: %v", left)
	}
	if _, err := json.Marshal(map[string]any{"c": juju.SecretContent{"a": secretValue}}); err == nil {
		t.Error("SecretContent encoded to JSON")
	}
}

// TestSecretToolArgs checks what the typed client sends, and what it
// refuses before running a tool.
func TestSecretToolArgs(t *testing.T) {
	m := &jujutest.Model{Unit: "web/0", Leader: true, Relations: []jujutest.Relation{{ID: 4, Endpoint: "db", RemoteApp: "pg"}}}
	tools := juju.Tools{Runner: jujutest.NewRunner(m)}
	ctx := context.Background()
	id, err := tools.SecretAdd(ctx, juju.SecretContent{"api-key": "k\x00\xff\n"}, &juju.SecretOptions{Label: "l", Description: "d", Expire: "24h"})
	if err != nil {
		t.Fatal(err)
	}
	rel := 4
	checks := []error{
		tools.SecretGrant(ctx, id, 4, "pg/1"),
		tools.SecretRevoke(ctx, id, juju.SecretRevokeFrom{Relation: &rel}),
		tools.SecretSet(ctx, id, nil, &juju.SecretOptions{Description: "new"}),
		tools.SecretRemove(ctx, id, 0),
	}
	if err := errors.Join(checks...); err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"secret-add", "--expire", "24h", "--label", "l", "--description", "d", "--file", "<file>"},
		{"secret-grant", "-r", "4", "--unit", "pg/1", "--", id},
		{"secret-revoke", "-r", "4", "--", id},
		{"secret-set", "--description", "new", "--", id},
		{"secret-remove", "--", id},
	}
	for i, c := range m.Calls {
		args := append([]string{c.Name}, c.Args...)
		if c.Name == "secret-add" {
			args[len(args)-1] = "<file>"
		}
		if i >= len(want) || !reflect.DeepEqual(args, want[i]) {
			t.Errorf("call %d: %q", i, args)
		}
	}
	if got := m.Staged.Secrets; len(got) != 0 {
		t.Errorf("after secret-remove: %v", got)
	}
	bad := []error{
		func() error { _, err := tools.SecretAdd(ctx, juju.SecretContent{"ab": "x"}, nil); return err }(),
		func() error { _, err := tools.SecretAdd(ctx, juju.SecretContent{}, nil); return err }(),
		func() error {
			_, err := tools.SecretAdd(ctx, juju.SecretContent{"key": "x"}, &juju.SecretOptions{Rotate: "often"})
			return err
		}(),
		func() error {
			_, err := tools.SecretAdd(ctx, juju.SecretContent{"key": "x"}, &juju.SecretOptions{Expire: "-1h"})
			return err
		}(),
		tools.SecretSet(ctx, id, nil, &juju.SecretOptions{Owner: juju.SecretOwnerUnit}),
		tools.SecretSet(ctx, "9m4e2mr0ui3e8a215n4g", juju.SecretContent{"key": "x"}, nil),
		tools.SecretRevoke(ctx, id, juju.SecretRevokeFrom{}),
		tools.SecretRevoke(ctx, id, juju.SecretRevokeFrom{App: "a", Unit: "a/0"}),
		func() error { _, err := tools.SecretGet(ctx, "", nil); return err }(),
		func() error { _, err := tools.SecretInfoGet(ctx, id, "l"); return err }(),
	}
	calls := len(m.Calls)
	for i, err := range bad {
		if err == nil {
			t.Errorf("bad call %d: no error", i)
		}
	}
	if len(m.Calls) != calls {
		t.Errorf("rejected calls ran tools: %v", m.Calls[calls:])
	}
	// The key rule is Juju's.
	for _, k := range []string{"abc", "a-b-c", "a1b", "ab", "Abc", "a--b", "a-", "1ab", "abc-"} {
		_, _, code := m.Exec("secret-add", []string{"--owner", "unit", k + "=v"}, nil)
		if fakeOK, clientOK := code == 0, juju.ValidSecretKey(k) == nil; fakeOK != clientOK {
			t.Errorf("key %q: fake accepts %v, juju.ValidSecretKey accepts %v", k, fakeOK, clientOK)
		}
	}
}

// TestSecretHooksInDocument: secret-changed, secret-rotate, secret-expired
// and secret-remove carry the secret's ID, label and revision in the
// document's hook field, and never its content.
func TestSecretHooksInDocument(t *testing.T) {
	m := newModel()
	m.Secrets = []jujutest.Secret{{ID: "secret:cs000000000000000001", Owner: "unit", Label: "tls",
		Contents: map[int]map[string]string{1: {"cert": secretValue}, 4: {"cert": secretValue}}}}
	for _, hook := range []juju.Kind{juju.KindSecretChanged, juju.KindSecretRotate, juju.KindSecretExpired, juju.KindSecretRemove} {
		var docs []map[string]any
		c := charm(handler{"h", capture(&docs), opbus.On{}})
		run(t, c, string(hook), m)
		want := map[string]any{"name": string(hook), "kind": string(hook), "secret-id": m.Secrets[0].ID, "secret-label": "tls", "secret-revision": 4}
		got := docs[0]["hook"].(map[string]any)
		delete(got, "event")
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: hook %v, want %v", hook, got, want)
		}
		if strings.Contains(fmt.Sprint(docs), secretValue) {
			t.Errorf("%s: the document holds the content", hook)
		}
	}
}

// TestSecretRevokeAppInRelationHook: in a relation hook Juju takes -r to
// be the hook's relation and refuses --app beside it. Revoking from the
// hook's remote application is sent as -r of the hook's relation and
// revokes its grant; another application is an error naming the hook's
// relation, before any tool runs.
func TestSecretRevokeAppInRelationHook(t *testing.T) {
	var errs []error
	c := charm(handler{"revoke", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
		tools := juju.FromContext(ctx).Tools
		errs = []error{
			tools.SecretRevoke(ctx, "secret:owned", juju.SecretRevokeFrom{App: "other"}),
			tools.SecretRevoke(ctx, "secret:owned", juju.SecretRevokeFrom{App: "pg"}),
		}
		return opbus.Status{}, nil
	}, juju.OnHook("db-relation-changed")})
	m := newModel()
	m.Secrets = []jujutest.Secret{{ID: "secret:owned", Owner: "application", Contents: map[int]map[string]string{1: {"pass": "a"}},
		Grants: []jujutest.SecretGrant{{Relation: 3, App: "pg"}}}}
	m = run(t, c, "db-relation-changed", m)
	if errs[0] == nil || !strings.Contains(errs[0].Error(), `Juju takes -r to be the hook's relation db:3 (application "pg")`) {
		t.Errorf("revoking from another application: %v", errs[0])
	}
	if errs[1] != nil {
		t.Errorf("revoking from the hook's remote application: %v", errs[1])
	}
	if len(m.Secrets[0].Grants) != 0 {
		t.Errorf("grants left %v", m.Secrets[0].Grants)
	}
	if n := m.CallCount("secret-revoke"); n != 1 {
		t.Errorf("%d secret-revoke calls, want 1 (calls %v)", n, m.Calls)
	}
}
