package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju"
)

// leadership waits for the unit to lead its application.
func leadership(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
	leader, err := opbus.Get[bool](ev.New, "leader")
	if err != nil {
		return opbus.Status{}, err
	}
	if !leader {
		return opbus.Waiting("Waiting for leadership"), nil
	}
	return opbus.Active(""), nil
}

// config checks the config item kind.
func config(_ context.Context, ev *opbus.Event) (opbus.Status, error) {
	kind, err := configKind(ev.New)
	if err != nil {
		return opbus.Status{}, err
	}
	if !validKind(kind) {
		return opbus.Blocked("Config item 'kind' must be set to ingress or egress"), nil
	}
	return opbus.Active(""), nil
}

// istioPilot checks the istio-pilot relation and, when the unit leads and
// its config is valid too, renders the gateway's manifest.
func istioPilot(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
	doc, err := juju.DocumentOf(ev)
	if err != nil {
		return opbus.Status{}, err
	}
	rels := doc.Relations["istio-pilot"]
	if len(rels) == 0 {
		return opbus.Blocked("Waiting for istio-pilot relation"), nil
	}
	pilot := rels[0].AppData // the metadata allows one istio-pilot relation
	name, port := pilot["service-name"], pilot["service-port"]
	if name == "" || port == "" {
		return opbus.Waiting("Waiting for istio-pilot relation data"), nil
	}
	if !dnsName().MatchString(name) {
		return opbus.Blocked(fmt.Sprintf("istio-pilot sent an invalid service-name %q", name)), nil
	}
	if p, err := strconv.Atoi(port); err != nil || p < 1 || p > 65535 {
		return opbus.Blocked(fmt.Sprintf("istio-pilot sent an invalid service-port %q", port)), nil
	}
	kind, err := configKind(ev.New)
	if err != nil {
		return opbus.Status{}, err
	}
	if !doc.Leader || !validKind(kind) {
		return opbus.Active(""), nil // the leadership and config slots say why nothing is rendered
	}
	var buf bytes.Buffer
	err = manifest().Execute(&buf, manifestData{Kind: kind, Namespace: doc.Model.Name, ServiceName: name, ServicePort: port})
	if err != nil {
		return opbus.Status{}, fmt.Errorf("rendering the manifest: %w", err)
	}
	if err := writeFile(filepath.Join(juju.FromContext(ctx).Env.CharmDir, "manifest.yaml"), buf.Bytes()); err != nil {
		return opbus.Status{}, err // the hook fails and Juju retries it
	}
	return opbus.Active(""), nil
}

// dnsName returns the pattern of a Kubernetes service name, compiled when
// a hook first checks one rather than when every hook's process starts.
var dnsName = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
})

// configKind returns the config item kind, or "" when it is unset.
func configKind(doc map[string]any) (string, error) {
	kind, err := opbus.Get[string](doc, "config.kind")
	if errors.Is(err, opbus.ErrAbsent) {
		return "", nil
	}
	return kind, err
}

func validKind(kind string) bool { return kind == "ingress" || kind == "egress" }

// writeFile replaces the file at path with data in one step.
func writeFile(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".manifest-*")
	if err != nil {
		return fmt.Errorf("writing the manifest: %w", err)
	}
	_, err = f.Write(data)
	err = errors.Join(err, f.Chmod(0o644), f.Close())
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("writing the manifest: %w", err)
	}
	return nil
}
