package main

import (
	"context"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

func TestMain(m *testing.M) { charmproc.Main(m) }

// metadataFiles are the charm's metadata, copied into every charm
// directory the tests make.
var metadataFiles = []string{"metadata.yaml", "config.yaml", "charmcraft.yaml"}

// The user secret of the tests: what juju add-secret printed, and two
// revisions of the password. The passwords must appear nowhere but in the
// secret and in the container's password file.
const (
	secretID  = "secret:d5fj493sf2bh7nljq620"
	password1 = "hunter2-first-revision-9f3a7c"
	password2 = "correct-horse-battery-staple-2b"
)

// userSecret is the user secret as the unit sees it once granted: owned
// by the model, observed by the application.
func userSecret(revisions ...string) jujutest.Secret {
	s := jujutest.Secret{ID: secretID, Contents: map[int]map[string]string{}}
	for i, pw := range revisions {
		s.Contents[i+1] = map[string]string{"password": pw}
	}
	return s
}

// step is one hook of the story: what happens before it (said for the
// transcript, done by change), and what the unit and its container look
// like after it.
type step struct {
	hook   string
	before string
	change func(*charmproc.Container, *jujutest.Model)
	want   jujutest.Status
	check  func(testing.TB, *charmproc.Container, *jujutest.Model)
}

// serving checks the app's configuration file, that the app runs, how
// many times it has started, and the password file (none when password
// is empty).
func serving(port, starts int, password string) func(testing.TB, *charmproc.Container, *jujutest.Model) {
	return func(t testing.TB, w *charmproc.Container, _ *jujutest.Model) {
		t.Helper()
		w.CheckServing(t, configFile, service, port, starts)
		pw, ok := w.Pebble.File(passwordFile)
		switch {
		case password == "" && ok:
			t.Errorf("%s exists before the secret could be read", passwordFile)
		case password != "" && (!ok || string(pw) != password):
			t.Errorf("%s: not the secret's latest password (exists: %v)", passwordFile, ok)
		case password != "" && w.Pebble.FileMode(passwordFile) != 0o600:
			t.Errorf("%s: mode %v, want 0600", passwordFile, w.Pebble.FileMode(passwordFile))
		}
	}
}

var (
	setConfig = func(key string, v any) func(*charmproc.Container, *jujutest.Model) {
		return func(_ *charmproc.Container, m *jujutest.Model) { m.Config[key] = v }
	}
	// name is juju config password-secret=<URI> of a user secret the
	// application has not been granted.
	name = func(_ *charmproc.Container, m *jujutest.Model) {
		m.Config["password-secret"] = secretID
		s := userSecret(password1)
		s.Ungranted = true
		m.Secrets = []jujutest.Secret{s}
	}
	grant   = func(_ *charmproc.Container, m *jujutest.Model) { m.Secrets[0].Ungranted = false }
	restart = func(w *charmproc.Container, _ *jujutest.Model) { w.Restart() }
	// update is juju update-secret: a new revision, which Juju announces
	// to the observers with secret-changed.
	update = func(_ *charmproc.Container, m *jujutest.Model) {
		m.Secrets[0].Contents[2] = map[string]string{"password": password2}
	}
)

// story is a unit's life, hook by hook, as the transcript shows it.
var story = []step{
	{"install", "the container is not up; password-secret is unset", nil,
		jujutest.Status{Status: "waiting", Message: "Waiting for Pebble"}, nil},
	{"config-changed", "`juju config sidecar password-secret=" + secretID + "`, a user secret not granted to the application",
		name,
		jujutest.Status{Status: "blocked", Message: "Secret not granted"}, nil},
	{"workload-pebble-ready", "the container's Pebble is up", func(w *charmproc.Container, _ *jujutest.Model) { w.Up() },
		jujutest.Status{Status: "blocked", Message: "Secret not granted"}, serving(8080, 1, "")},
	{"update-status", "`juju grant-secret app-password sidecar` (which fires no hook)", grant,
		jujutest.Status{Status: "active"}, serving(8080, 1, password1)},
	{"config-changed", "`juju config sidecar port=70000`", setConfig("port", 70000.0),
		jujutest.Status{Status: "blocked", Message: "Config item 'port' must be from 1 to 65535, not 70000"}, serving(8080, 1, password1)},
	{"config-changed", "`juju config sidecar port=9090`", setConfig("port", 9090.0),
		jujutest.Status{Status: "active"}, serving(9090, 2, password1)},
	{"secret-changed", "`juju update-secret app-password password=…`: revision 2", update,
		jujutest.Status{Status: "active"}, serving(9090, 2, password2)},
	{"update-status", "nothing", nil,
		jujutest.Status{Status: "active"}, serving(9090, 2, password2)},
	{"workload-pebble-ready", "the workload container restarts: its new Pebble has none of the layer, service and files", restart,
		jujutest.Status{Status: "active"}, serving(9090, 1, password2)},
	{"update-status", "the container goes down", func(w *charmproc.Container, _ *jujutest.Model) { w.Down() },
		jujutest.Status{Status: "waiting", Message: "Waiting for Pebble"}, nil},
}

// installed is the model before the first hook: the config's defaults.
func installed() *jujutest.Model {
	return &jujutest.Model{Unit: "sidecar/0", Config: map[string]any{"port": 8080.0, "password-secret": ""}}
}

// hookEnv returns the environment of hook.
func hookEnv(hook string) juju.Env {
	e := juju.Env{Name: hook, Kind: juju.HookKind(hook)}
	if e.Kind.IsWorkload() {
		e.Workload = container
	}
	if e.Kind.IsSecret() {
		e.SecretID = secretID
	}
	return e
}

// TestStory runs the transcript's story in process, against the
// in-memory model and the fake Pebble, as ops-scenario runs a charm: the
// same statuses and container state as run as processes (J5).
func TestStory(t *testing.T) {
	w := charmproc.NewContainer(t, container)
	h := &jujutest.Harness{Setup: setup, CharmDir: charmproc.CharmDir(t, metadataFiles...), PebbleDir: w.Dir}
	m := installed()
	for i, s := range story {
		if s.change != nil {
			s.change(w, m)
		}
		out, err := h.RunEnv(context.Background(), hookEnv(s.hook), m)
		if err != nil {
			t.Fatalf("step %d, %s: %v", i+1, s.hook, err)
		}
		if out.UnitStatus != s.want {
			t.Errorf("step %d, %s: status %+v, want %+v", i+1, s.hook, out.UnitStatus, s.want)
		}
		if s.check != nil {
			s.check(t, w, out)
		}
		m = out
	}
}
