package juju

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/opbus/opbus"
)

// containerSections are the metadata keys whose entries are workload
// containers.
var containerSections = []string{"containers"}

// containerFields are the fields of each entry of the document's
// containers field.
var containerFields = []string{"boot_id", "can_connect"}

// ProbeTimeout bounds the system-info request that tells whether a
// container's Pebble can be reached when the document is built.
const ProbeTimeout = 2 * time.Second

// ReadContainers returns the names of the charm's workload containers (the
// keys of its containers section), sorted, from metadata.yaml in dir or,
// without one, from charmcraft.yaml. It is an error wrapping
// [fs.ErrNotExist] when dir has neither.
func ReadContainers(dir string) ([]string, error) {
	return readKeys(dir, containerSections, "containers")
}

// ContainerInfo is one entry of the document's containers field.
type ContainerInfo struct {
	// CanConnect reports whether the container's Pebble answered a
	// system-info request when the hook started.
	CanConnect bool `json:"can_connect"`
	// BootID is the boot ID Pebble gave ([PebbleInfo.BootID]), new each
	// time the container starts; empty when Pebble did not answer.
	BootID string `json:"boot_id"`
}

// planContainers checks the subscriptions to containers and returns the
// containers to probe, and whether the document has the containers field
// at all. known lists the charm's containers (nil when unknown: knownErr
// says why). A handler of the whole document gets every known container,
// and none when they are unknown; one that subscribes to containers or
// containers[*] needs them known.
func planContainers(subs []opbus.Subscription, known []string, knownErr error) ([]string, bool, error) {
	names := map[string]bool{}
	every, read := false, false
	for _, s := range subs {
		if len(s.Fields) == 0 {
			every, read = true, true
		}
		for _, f := range s.Fields {
			if len(f) == 0 || f[0].Kind != opbus.SegKey {
				every, read = true, true
				continue
			}
			if f[0].Key != "containers" {
				continue
			}
			read = true
			if len(f) == 1 || f[1].Kind != opbus.SegKey {
				if known == nil {
					return nil, false, fmt.Errorf("juju: handler %q subscribes to %s, but the charm's containers are unknown (%v); set Options.Containers", s.ID, f, knownErr)
				}
				every = true
				continue
			}
			name := f[1].Key
			if known != nil && !slices.Contains(known, name) {
				list := strings.Join(known, ", ")
				if list == "" {
					list = "none"
				}
				return nil, false, fmt.Errorf("juju: handler %q subscribes to %s, but the charm has no container %q (%sits containers are %s)", s.ID, f, name, didYouMean("containers.", name, known), list)
			}
			if len(f) > 2 && f[2].Kind == opbus.SegKey && !slices.Contains(containerFields, f[2].Key) {
				return nil, false, fmt.Errorf("juju: handler %q subscribes to %s, which is not in the document (%sa container's fields are %s)", s.ID, f, didYouMean(f[:2].String()+".", f[2].Key, containerFields), strings.Join(containerFields, ", "))
			}
			names[name] = true
		}
	}
	if every {
		for _, name := range known {
			names[name] = true
		}
	}
	return slices.Sorted(maps.Keys(names)), read, nil
}

// containers returns the document's containers field: whether each
// container's Pebble answers, and its boot ID, probed one after the
// other, each for at most ProbeTimeout.
func (r *reader) containers(ctx context.Context) map[string]any {
	out := make(map[string]any, len(r.plan.containers))
	for _, name := range r.plan.containers {
		pctx, cancel := context.WithTimeout(ctx, ProbeTimeout)
		info, err := NewContainer(name, r.pebbleDir).Info(pctx)
		cancel()
		if err != nil {
			info = &PebbleInfo{}
		}
		out[name] = map[string]any{"can_connect": err == nil, "boot_id": info.BootID}
	}
	return out
}

// planContainers adds to the run's plan the containers to probe; known
// lists the charm's containers, nil meaning those of its metadata in dir
// (the charm directory, "" when none was found).
func (r *run) planContainers(known []string, dir string) error {
	var knownErr error
	switch {
	case known != nil:
	case dir == "":
		knownErr = fmt.Errorf("JUJU_CHARM_DIR is not set, and neither the working directory nor the program's holds metadata.yaml or charmcraft.yaml")
	default:
		known, knownErr = ReadContainers(dir)
	}
	var err error
	subs := append(r.bus.Subscriptions(), r.collectorReads()...)
	r.plan.containers, r.plan.probe, err = planContainers(subs, known, knownErr)
	return err
}
