// Quickstart runs opbus on its embedded default: no cluster and no Juju
// controller. It diffs two versions of a Pod whose container died and prints
// the changes and a summary of status slots.
package main

import (
	"fmt"
	"log"

	"github.com/opbus/opbus"
)

func main() {
	cmp, err := opbus.NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"metadata.resourceVersion", "metadata.managedFields"},
		ListKeys: map[string]string{"containers": "name", "containerStatuses": "name"},
	})
	if err != nil {
		log.Fatal(err)
	}
	before := pod("Running", map[string]any{"running": map[string]any{"startedAt": "2026-11-30T10:00:00Z"}}, true, "100")
	after := pod("Running", map[string]any{"terminated": map[string]any{"exitCode": 1, "reason": "Error"}}, false, "101")

	fmt.Println("changes between two versions of Pod default/web:")
	for _, c := range cmp.Compare(before, after) {
		fmt.Println("  ", c)
	}

	slots := opbus.Slots{}
	slots.Set("crash-watch", opbus.Blocked("container app terminated: exit 1 (Error)"))
	slots.Set("config", opbus.Active(""))
	fmt.Println("overall status:", slots.Summary())
}

func pod(phase string, state map[string]any, ready bool, rv string) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "web", "namespace": "default", "resourceVersion": rv},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "example/app:1"}}},
		"status": map[string]any{"phase": phase, "containerStatuses": []any{
			map[string]any{"name": "app", "ready": ready, "state": state},
		}},
	}
}
