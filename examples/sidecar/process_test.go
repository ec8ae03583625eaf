package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

// unitEnv names the unit and its model in every hook.
var unitEnv = juju.Env{Unit: "sidecar/0", ModelName: "web", ModelUUID: "2b4c6d8e-1f3a-4b5c-9d7e-0a1b2c3d4e5f", Version: "3.6.4"}

// hookDigest matches the secret handler's digest in the stored record.
var hookDigest = regexp.MustCompile(`"secret":"[A-Za-z0-9_-]{22}"`)

// containerState describes the workload container for the transcript.
func containerState(w *charmproc.Container) string {
	if w.Pebble == nil {
		return "down"
	}
	var parts []string
	if data, ok := w.Pebble.File(configFile); ok {
		var conf struct{ Port int }
		json.Unmarshal(data, &conf)
		parts = append(parts, fmt.Sprintf("config port %d", conf.Port))
	}
	for _, s := range w.Pebble.Services() {
		parts = append(parts, fmt.Sprintf("%s %s (started %d×)", s.Name, s.Current, w.Pebble.Starts(s.Name)))
	}
	if _, ok := w.Pebble.File(passwordFile); ok {
		parts = append(parts, fmt.Sprintf("password file %v", w.Pebble.FileMode(passwordFile)))
	}
	if len(parts) == 0 {
		return "up, empty"
	}
	return strings.Join(parts, "; ")
}

// TestProcessTranscript runs the story as Juju runs a charm: every hook a
// new process of the dispatch script in a charm directory as charmcraft
// packs it, with the hook's environment, the fake hook tools alone in
// PATH, and the workload container's fake Pebble listening where
// OPBUS_PEBBLE_DIR says. It checks the unit status and the container
// after each hook, that the secret's content reaches nothing but the
// container's password file, and writes or compares TRANSCRIPT.md.
func TestProcessTranscript(t *testing.T) {
	w := charmproc.NewContainer(t, container)
	u := jujutest.DeployCharm(t, jujutest.BuildCharm(t, ""), installed(), unitEnv,
		&jujutest.DeployOptions{Files: metadataFiles, Dispatch: "dispatch", BinName: "sidecar"})
	u.Extra = []string{juju.PebbleDirEnv + "=" + w.Dir}
	var b, rows, stderrs, plans, calls strings.Builder
	var last *jujutest.Model
	var lastPlan []byte
	for i, s := range story {
		r := u.Hook(hookEnv(s.hook), func(m *jujutest.Model) {
			if s.change != nil {
				s.change(w, m)
			}
		})
		stderrs.WriteString(r.Stderr)
		args, _ := json.Marshal(r.Model.Calls)
		calls.Write(args)
		if r.Exit != 0 {
			t.Fatalf("step %d, %s: exit %d: %s", i+1, s.hook, r.Exit, r.Stderr)
		}
		m := r.Model
		if m.UnitStatus != s.want {
			t.Errorf("step %d, %s: status %+v, want %+v", i+1, s.hook, m.UnitStatus, s.want)
		}
		if s.check != nil {
			s.check(t, w, m)
		}
		if m.CallCount("state-get") != 1 || m.CallCount("state-set") > 1 || m.CallCount("status-set") > 1 {
			t.Errorf("step %d, %s: tool calls %s: want one state-get and at most one state-set and status-set", i+1, s.hook, charmproc.Calls(m))
		}
		fmt.Fprintf(&rows, "| %d | `%s` | %s | %d | %s | %s | %s | %s |\n", i+1, s.hook, s.before, r.Exit,
			charmproc.Status(m.UnitStatus), charmproc.SlotLevels(t, m), containerState(w), charmproc.Calls(m))
		if s.before == "nothing" && m.CallCount("state-set")+m.CallCount("status-set")+m.CallCount("secret-get") != 0 {
			t.Errorf("step %d, %s with nothing changed: tool calls %s: want no state-set, status-set or secret-get", i+1, s.hook, charmproc.Calls(m))
		}
		if w.Pebble != nil {
			plan, _ := json.MarshalIndent(w.Pebble.Plan(), "", "  ")
			plans.Write(plan)
			lastPlan = plan
		}
		last = m
	}
	b.WriteString(transcriptHead)
	b.WriteString(rows.String())
	b.WriteString("\nThe unit's log (`juju debug-log`), from juju-log:\n\n```\n")
	for _, l := range last.Logs {
		fmt.Fprintf(&b, "%s %s\n", l.Level, l.Message)
	}
	b.WriteString("```\n\nThe stored record after the last hook (`state-get opbus`), one JSON string.\n" +
		"The secret handler's digest covers `hook.event`, new at every hook, so it\ndiffers from run to run; it is shown as `…`:\n\n```json\n")
	b.WriteString(hookDigest.ReplaceAllString(last.State[juju.DefaultStateKey], `"secret":"…"`))
	b.WriteString("\n```\n\nThe container's Pebble plan while it was last up (step 9), as the charm's\nlayer made it (`pebble plan`, here in JSON):\n\n```json\n")
	b.Write(lastPlan)
	b.WriteString("\n```\n")

	// The secret's content reaches the container's password file and
	// nothing else: not the transcript, the charm's standard error, the
	// unit's log, its state, a hook tool's arguments or the Pebble plan.
	public := *last
	public.Secrets = nil
	seen, err := json.Marshal(public)
	if err != nil {
		t.Fatal(err)
	}
	for _, pw := range []string{password1, password2} {
		for what, text := range map[string]string{"the transcript": b.String(), "standard error": stderrs.String(),
			"the model (log, state, statuses)": string(seen), "the hook tools' arguments": calls.String(), "the Pebble plan": plans.String()} {
			if strings.Contains(text, pw) {
				t.Errorf("a password of the secret is in %s", what)
			}
		}
	}
	charmproc.Transcript(t, "TRANSCRIPT.md", b.String(), "TestProcessTranscript")
	checkREADMEs(t, rows.String())
}

// checkREADMEs checks that this example's README shows the transcript's
// table as it is, and that the repository's README has a row for each of
// the story's steps but the last, with its hook and unit status.
func checkREADMEs(t *testing.T, rows string) {
	t.Helper()
	readme, err := os.ReadFile("README.md")
	if err != nil || !strings.Contains(string(readme), tableHead+rows) {
		t.Errorf("README.md does not show the transcript's table as TRANSCRIPT.md has it (%v)", err)
	}
	root, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, text, found := strings.Cut(string(root), "[`examples/sidecar`](examples/sidecar) is")
	if !found {
		t.Fatal("README.md (repository) does not present examples/sidecar")
	}
	for i, s := range story[:len(story)-1] {
		want := s.want.Status
		if s.want.Message != "" {
			want += ": " + s.want.Message
		}
		at := strings.Index(text, "| `"+s.hook+"` |")
		if at < 0 {
			t.Errorf("README.md (repository): no row for step %d, %s, after the previous one", i+1, s.hook)
			continue
		}
		line, rest, _ := strings.Cut(text[at:], "\n")
		if !strings.Contains(line, "| "+want+" ") {
			t.Errorf("README.md (repository): step %d, %s: row %q, want status %q", i+1, s.hook, line, want)
		}
		text = rest
	}
}

const transcriptHead = `# sidecar: a transcript

Each hook below ran as Juju runs it: a new process of the charm's ` + "`dispatch`" + `
script, in the charm directory, with Juju's hook environment, the fake hook
tools of ` + "`jujutest.InstallTools`" + ` alone in PATH, and the workload
container's fake Pebble (` + "`jujutest.StartPebble`" + `, which speaks Pebble's HTTP
API on the container's socket) where ` + "`OPBUS_PEBBLE_DIR`" + ` says. After each
process the harness applies its state-set and secret changes if it exited
0, and drops them otherwise, as Juju does. Generated by
` + "`TestProcessTranscript`" + ` (run it with ` + "`OPBUS_WRITE_TRANSCRIPT=1`" + ` to
regenerate); the test fails when this file no longer matches, and when a
password of the secret appears in it, in the charm's standard error, in
the unit's log, state or tool arguments, or in the Pebble plan.

The user secret was made with ` + "`juju add-secret app-password password=…`" + `,
which printed its URI, ` + "`secret:d5fj493sf2bh7nljq620`" + `. "Slots" are the
per-handler statuses the charm stores in the unit's state; the unit status
folds them: the highest level wins, and its message joins the messages of
every slot at that level, in slot-name order.

` + tableHead

// tableHead is the head of the transcript's table.
const tableHead = `| # | hook | before the hook | exit | unit status | slots | workload container | hook tool calls |
|---|------|-----------------|------|-------------|-------|--------------------|-----------------|
`
