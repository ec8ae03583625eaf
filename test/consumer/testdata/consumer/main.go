// Consumer is a user's program, built by the consumer test outside the
// repository: it imports the core and the Kubernetes adapter as released
// modules and prints the diff of a Pod whose container died, compared as the
// Kubernetes adapter configures the bus.
package main

import (
	"fmt"
	"os"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/k8s"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func main() {
	d, err := podDiff()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(k8s.KindOf(schema.GroupKind{Kind: "Pod"}), d)
}

// podDiff compares a Pod before and after its container dies, with the
// adapter's ignored paths and list keys.
func podDiff() (opbus.Diff, error) {
	c, err := opbus.NewComparer(&opbus.CompareOptions{Ignore: k8s.Ignore, ListKeys: k8s.ListKeys})
	if err != nil {
		return nil, err
	}
	return c.Compare(pod("1", true), pod("2", false)), nil
}

func pod(resourceVersion string, ready bool) map[string]any {
	return map[string]any{
		"metadata": map[string]any{"name": "web", "resourceVersion": resourceVersion},
		"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "sidecar", "ready": true},
			map[string]any{"name": "app", "ready": ready},
		}},
	}
}
