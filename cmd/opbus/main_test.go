package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/internal/explain"
)

// TestMain runs the command itself when the test binary is started as it
// (see command), so that the tests run it as a process.
func TestMain(m *testing.M) {
	if os.Getenv("OPBUS_TEST_RUN_COMMAND") == "1" {
		main()
	}
	os.Exit(m.Run())
}

// command runs the opbus command with args as a process.
func command(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return commandIn(t, "", args...)
}

// commandIn is command with stdin as its standard input.
func commandIn(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.Env = append(os.Environ(), "OPBUS_TEST_RUN_COMMAND=1")
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		code = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

var key = opbus.Key{Kind: "WebApp", Namespace: "shop", Name: "front"}

// writeStore runs a real bus on a FileStore in a new directory: deploy
// fails, scale succeeds, poll asks Again, a collector keeps a slot.
func writeStore(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	store, err := opbus.NewFileStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := opbus.New(&opbus.Options{Store: store, Incarnation: func(obj map[string]any) string {
		return obj["metadata"].(map[string]any)["uid"].(string)
	}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Handle("deploy", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, errors.New("image registry unreachable")
	}, opbus.On{Fields: []string{"spec.image"}}))
	must(b.Handle("scale", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Active("3 replicas"), nil
	}, opbus.On{Fields: []string{"spec.replicas"}}))
	must(b.Handle("poll", func(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
		ev.Again(time.Hour)
		return opbus.Waiting("rollout in progress"), nil
	}, opbus.On{}))
	must(b.Handle("fixed", func(context.Context, *opbus.Event) (opbus.Status, error) {
		return opbus.Status{}, opbus.Permanent(errors.New("spec.tier: unknown tier"))
	}, opbus.On{Fields: []string{"spec.tier"}}))
	must(b.Collect("summary", func(context.Context, opbus.Key, map[string]any) opbus.Status { return opbus.Active("serving") }))
	obj := map[string]any{
		"metadata": map[string]any{"uid": "7f3c"},
		"spec":     map[string]any{"image": "shop:2", "replicas": 3, "tier": "gold"},
	}
	if err := b.Dispatch(context.Background(), key, obj); err == nil {
		t.Fatal("Dispatch: no error, want deploy's and fixed's")
	}
	return dir
}

// TestExplainFileStore: opbus explain, run as a process, explains the
// record a real bus wrote to a FileStore, as text and as JSON, and says
// what a record alone cannot tell.
func TestExplainFileStore(t *testing.T) {
	dir := writeStore(t)
	out, errOut, code := command(t, "explain", "-store", dir, "WebApp", "shop/front")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"WebApp shop/front (from the record, at ",
		"status: error \"image registry unreachable; spec.tier: unknown tier\"\n",
		"incarnation: 7f3c\n",
		"deploy: failed\n  it failed on the value of digest ",
		"  error: image registry unreachable\n",
		"fixed: failed-permanently\n",
		"poll: scheduled\n  it handled a value; a schedule (On.Every or Event.Again) of 1h0m0s: next run due ",
		"  slot: waiting \"rollout in progress\"\n",
		"scale: ran\n  it handled a value; whether it is the current one cannot be told from the record\n  slot: active \"3 replicas\"\n",
		"summary: slot-only\n",
		"note: made from the stored record alone",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	out, errOut, code = command(t, "explain", "WebApp", "shop/front", "-store", dir, "-json") // flags after the arguments
	if code != 0 {
		t.Fatalf("-json: exit %d: %s", code, errOut)
	}
	var r explain.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("-json: %v:\n%s", err, out)
	}
	got := map[string]explain.Handler{}
	for _, h := range r.Handlers {
		got[h.ID] = h
	}
	if h := got["deploy"]; h.Reason != explain.Failed || h.Attempt != 1 || h.NextRetry == nil || h.Error != "image registry unreachable" {
		t.Errorf("deploy: got %+v, want failed, attempt 1, a next retry, its error", h)
	}
	if h := got["poll"]; h.Reason != explain.Scheduled || h.NextDue == nil || h.Every != "1h0m0s" {
		t.Errorf("poll: got %+v, want scheduled every hour", h)
	}
	if r.Key != (explain.Key{Kind: "WebApp", Namespace: "shop", Name: "front"}) || r.Source != "record" || r.Incarnation != "7f3c" {
		t.Errorf("report: got key %+v, source %q, incarnation %q", r.Key, r.Source, r.Incarnation)
	}
}

// TestExplainErrors: bad input is an error naming it, exit 2 for usage
// and 1 for a missing record.
func TestExplainErrors(t *testing.T) {
	dir := writeStore(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{nil, 2, "expected a subcommand"},
		{[]string{"explian"}, 2, `unknown subcommand "explian"`},
		{[]string{"explain", "WebApp", "x"}, 2, "-store or -juju-state is missing"},
		{[]string{"explain", "-store", dir, "WebApp"}, 2, "expected KIND and [NAMESPACE/]NAME"},
		{[]string{"explain", "-store", dir, "-now", "yesterday", "WebApp", "shop/front"}, 2, `-now "yesterday": expected an RFC 3339 time`},
		{[]string{"explain", "-store", dir + "/nothing", "WebApp", "x"}, 1, "not a directory"},
		{[]string{"explain", "-store", dir, "WebApp", "shop/back"}, 1, "WebApp shop/back: no record in"},
	} {
		_, errOut, code := command(t, tc.args...)
		if code != tc.code || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want exit %d and %q", tc.args, code, errOut, tc.code, tc.want)
		}
	}
	if _, err := os.Stat(dir + "/nothing"); err == nil {
		t.Error("explain made the missing -store directory: it must write nothing")
	}
}
