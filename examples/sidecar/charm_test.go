package main

import (
	"context"
	"encoding/json"
	"os"
	"testing"

	"github.com/opbus/opbus/adapters/juju"
	"github.com/opbus/opbus/adapters/juju/jujutest"
	"github.com/opbus/opbus/internal/charmproc"
)

func TestMain(m *testing.M) {
	code := m.Run()
	charmproc.Cleanup()
	os.Exit(code)
}

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

// world is the unit's workload container between hooks: its fake
// Pebble, nil while the container is down.
type world struct {
	t      testing.TB
	dir    string // OPBUS_PEBBLE_DIR
	pebble *jujutest.Pebble
}

// up starts the container's Pebble, empty as a container fresh from its
// image.
func (w *world) up() {
	if w.pebble == nil {
		w.pebble = jujutest.StartPebble(w.t, w.dir, container)
	}
}

// down stops the container's Pebble.
func (w *world) down() {
	if w.pebble != nil {
		w.pebble.Close()
		w.pebble = nil
	}
}

// step is one hook of the story: what happens before it (said for the
// transcript, done by change), and what the unit and its container look
// like after it.
type step struct {
	hook   string
	before string
	change func(*world, *jujutest.Model)
	want   jujutest.Status
	check  func(testing.TB, *world, *jujutest.Model)
}

// serving checks the app's configuration file, that the app runs, how
// many times it has started, and the password file (none when password
// is empty).
func serving(port, starts int, password string) func(testing.TB, *world, *jujutest.Model) {
	return func(t testing.TB, w *world, _ *jujutest.Model) {
		t.Helper()
		data, ok := w.pebble.File(configFile)
		var conf struct{ Port int }
		if !ok || json.Unmarshal(data, &conf) != nil || conf.Port != port {
			t.Errorf("%s: got %q (exists: %v), want port %d", configFile, data, ok, port)
		}
		svcs := w.pebble.Services()
		if len(svcs) != 1 || svcs[0].Name != service || svcs[0].Current != "active" {
			t.Errorf("services: got %+v, want %s active", svcs, service)
		}
		if got := w.pebble.Starts(service); got != starts {
			t.Errorf("%s started %d times, want %d", service, got, starts)
		}
		pw, ok := w.pebble.File(passwordFile)
		switch {
		case password == "" && ok:
			t.Errorf("%s exists before the secret could be read", passwordFile)
		case password != "" && (!ok || string(pw) != password):
			t.Errorf("%s: not the secret's latest password (exists: %v)", passwordFile, ok)
		case password != "" && w.pebble.FileMode(passwordFile) != 0o600:
			t.Errorf("%s: mode %v, want 0600", passwordFile, w.pebble.FileMode(passwordFile))
		}
	}
}

var (
	setConfig = func(key string, v any) func(*world, *jujutest.Model) {
		return func(_ *world, m *jujutest.Model) { m.Config[key] = v }
	}
	grant = func(_ *world, m *jujutest.Model) { m.Secrets = []jujutest.Secret{userSecret(password1)} }
	// update is juju update-secret: a new revision, which Juju announces
	// to the observers with secret-changed.
	update = func(_ *world, m *jujutest.Model) {
		m.Secrets[0].Contents[2] = map[string]string{"password": password2}
	}
)

// story is a unit's life, hook by hook, as the transcript shows it.
var story = []step{
	{"install", "the container is not up; password-secret is unset", nil,
		jujutest.Status{Status: "waiting", Message: "Waiting for Pebble"}, nil},
	{"config-changed", "`juju config sidecar password-secret=" + secretID + "`, a user secret not granted to the application",
		setConfig("password-secret", secretID),
		jujutest.Status{Status: "blocked", Message: "Secret not granted"}, nil},
	{"workload-pebble-ready", "the container's Pebble is up", func(w *world, _ *jujutest.Model) { w.up() },
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
	{"update-status", "the container goes down", func(w *world, _ *jujutest.Model) { w.down() },
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
	w := &world{t: t, dir: jujutest.PebbleDir(t)}
	h := &jujutest.Harness{Setup: setup, CharmDir: charmproc.CharmDir(t, metadataFiles...), PebbleDir: w.dir}
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
