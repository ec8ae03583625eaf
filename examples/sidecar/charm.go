package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

// The app's files and its Pebble names.
const (
	container    = "workload"
	configFile   = "/etc/sidecar/config.json"
	passwordFile = "/etc/sidecar/password"
	appBin       = "/usr/bin/sidecar-app"
	service      = "app"
)

// The statuses the handlers report.
var (
	waitingForPebble    = opbus.Waiting("Waiting for Pebble")
	secretNotGranted    = opbus.Blocked("Secret not granted")
	secretOptionUnset   = opbus.Blocked("Config item 'password-secret' must name a user secret")
	secretHasNoPassword = opbus.Blocked("Secret has no password key")
)

// port returns the config option port and whether it is a port number,
// 1 to 65535. Juju's integers reach the handlers as int64 (float64 from a
// test that builds the document itself).
func port(cfg map[string]any) (int, bool) {
	switch v := cfg["port"].(type) {
	case int64:
		return int(v), v >= 1 && v <= 65535
	case float64:
		return int(v), v == float64(int(v)) && v >= 1 && v <= 65535
	case json.Number:
		n, err := strconv.Atoi(string(v))
		return n, err == nil && n >= 1 && n <= 65535
	}
	return 0, false
}

// config checks the config option port.
func config(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	if _, ok := port(doc.Config); !ok {
		return opbus.Blocked(fmt.Sprintf("Config item 'port' must be from 1 to 65535, not %v", doc.Config["port"])), nil
	}
	return opbus.Active(""), nil
}

// workload writes the app's configuration into the workload container and
// has Pebble run the app. A bad port is the config handler's to report:
// the app keeps running with the last good one.
func workload(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	if !doc.Containers[container].CanConnect {
		return waitingForPebble, nil
	}
	p, ok := port(doc.Config)
	if !ok {
		return opbus.Status{}, nil
	}
	c := juju.FromContext(ctx).Container(container)
	conf, _ := json.Marshal(map[string]any{"port": p, "password-file": passwordFile})
	sum := sha256.Sum256(conf)
	if err := c.Push(ctx, configFile, conf, &juju.PushOptions{MakeDirs: true, Permissions: 0o644}); err != nil {
		return opbus.Status{}, err
	}
	layer := &juju.Layer{
		Summary: "web app",
		Services: map[string]*juju.Service{service: {
			Override: "replace",
			Command:  appBin + " --config " + configFile,
			Startup:  "enabled",
			// The file's digest makes the definition change with the
			// file, so that replan restarts the app for it.
			Environment: map[string]string{"CONFIG_SHA256": hex.EncodeToString(sum[:])},
		}},
	}
	if err := c.AddLayer(ctx, service, layer, true); err != nil {
		return opbus.Status{}, err
	}
	// Replan starts the app, or restarts it when its definition changed.
	if err := c.Replan(ctx); err != nil {
		return opbus.Status{}, err
	}
	return opbus.Active(""), nil
}

// secret reads the password of the user secret named by the config option
// password-secret and, once the container can be reached, pushes it
// there, readable by the app's user only; the app reads it at each login.
// The password goes to Pebble and nowhere else: not into a status, a log
// line, the layer or the stored record.
func secret(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	id, _ := doc.Config["password-secret"].(string)
	if id == "" {
		return secretOptionUnset, nil
	}
	hook := juju.FromContext(ctx)
	// Refresh: read the latest revision and keep tracking it, so that the
	// user's juju update-secret reaches the app at secret-changed.
	content, err := hook.Tools.SecretGet(ctx, id, &juju.SecretGetOptions{Refresh: true})
	if notGranted(err) {
		return secretNotGranted, ev.SetValue(notGrantedValue, "true")
	}
	if err := ev.SetValue(notGrantedValue, ""); err != nil {
		return opbus.Status{}, err
	}
	if err != nil {
		return opbus.Status{}, err
	}
	password, ok := content["password"]
	if !ok {
		return secretHasNoPassword, nil
	}
	if !doc.Containers[container].CanConnect {
		// The workload handler says Waiting; this one runs again when
		// the container comes up.
		return opbus.Active(""), nil
	}
	if err := hook.Container(container).Push(ctx, passwordFile, []byte(password), &juju.PushOptions{MakeDirs: true, Permissions: 0o600}); err != nil {
		return opbus.Status{}, err
	}
	return opbus.Active(""), nil
}

// notGranted reports whether err is secret-get's answer for a secret the
// application may not read ([juju.ErrSecretNotGranted]): not granted yet,
// in the words of Juju before 3.6 ("permission denied") or after (`"<unit>"
// is not allowed to read this secret`), or not found where Juju hides
// that the secret exists. Any other failure (the controller unreachable)
// fails the hook, which Juju retries.
func notGranted(err error) bool { return errors.Is(err, juju.ErrSecretNotGranted) }
