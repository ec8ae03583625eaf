package opbus_test

import (
	"errors"
	"fmt"

	"github.com/opbus/opbus"
)

func ExampleParsePath() {
	p, err := opbus.ParsePath(`status.containerStatuses[name=app].state`)
	if err != nil {
		panic(err)
	}
	fmt.Println(p, len(p))

	_, err = opbus.ParsePath("spec..containers")
	var pe *opbus.PathError
	fmt.Println(errors.As(err, &pe), pe.Offset)
	fmt.Println(err)
	// Output:
	// status.containerStatuses[name=app].state 4
	// true 5
	// opbus: field path spec..containers: at offset 5: empty key between dots: expected a key
}

func ExampleCompare() {
	old := map[string]any{"status": map[string]any{"phase": "Running", "restarts": 1}}
	new := map[string]any{"status": map[string]any{"phase": "Failed", "restarts": int64(1), "reason": "Error"}}
	for _, c := range opbus.Compare(old, new) {
		fmt.Println(c)
	}
	// Output:
	// change status.phase: "Running" → "Failed"
	// add status.reason = "Error"
}

func ExampleComparer() {
	cmp, err := opbus.NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"metadata.resourceVersion"},
		ListKeys: map[string]string{"containerStatuses": "name"},
	})
	if err != nil {
		panic(err)
	}
	old := map[string]any{
		"metadata": map[string]any{"resourceVersion": "41"},
		"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "sidecar", "ready": true},
			map[string]any{"name": "app", "ready": true},
		}},
	}
	new := map[string]any{
		"metadata": map[string]any{"resourceVersion": "42"},
		"status": map[string]any{"containerStatuses": []any{
			map[string]any{"name": "app", "ready": false},
			map[string]any{"name": "sidecar", "ready": true},
		}},
	}
	d := cmp.Compare(old, new)
	fmt.Println(d)
	fmt.Println(d.Under(opbus.MustParsePath("status.containerStatuses")))
	// Output:
	// change status.containerStatuses[name=app].ready: true → false
	// change [name=app].ready: true → false
}

func ExampleSummarize() {
	slots := opbus.Slots{}
	slots.Set("config", opbus.Blocked("config item 'kind' must be set"))
	slots.Set("relation", opbus.Blocked("waiting for istio-pilot relation"))
	fmt.Println(slots.Summary())

	slots.Set("config", opbus.Active("")) // fixing one problem hides no other
	fmt.Println(opbus.Summarize(slots))
	// Output:
	// blocked: config item 'kind' must be set; waiting for istio-pilot relation
	// blocked: waiting for istio-pilot relation
}
