package jsoncompare_test

import (
	"fmt"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/jsoncompare"
)

func ExampleCompare() {
	old := []byte(`{"metadata":{"resourceVersion":"41"},"status":{"phase":"Running","restarts":1}}`)
	new := []byte(`{"metadata":{"resourceVersion":"42"},"status":{"phase":"Failed","restarts":1.0}}`)
	d, err := jsoncompare.Compare(old, new)
	if err != nil {
		panic(err)
	}
	fmt.Println(d)
	_, err = jsoncompare.Compare(old, []byte(`{"status":{"phase":"Failed",}}`))
	fmt.Println(err)
	// Output:
	// change metadata.resourceVersion: "41" → "42"
	// change status.phase: "Running" → "Failed"
	// jsoncompare: new JSON: invalid character '}' at byte 28: want a string key in an object
}

func ExampleComparer() {
	cmp, err := jsoncompare.NewComparer(&opbus.CompareOptions{
		Ignore:   []string{"metadata.resourceVersion"},
		ListKeys: map[string]string{"containerStatuses": "name"},
	})
	if err != nil {
		panic(err)
	}
	old := []byte(`{"metadata":{"resourceVersion":"41"},"status":{"containerStatuses":[{"name":"app","ready":true},{"name":"proxy","ready":true}]}}`)
	new := []byte(`{"metadata":{"resourceVersion":"42"},"status":{"containerStatuses":[{"name":"proxy","ready":true},{"name":"app","ready":false}]}}`)
	d, err := cmp.Compare(old, new)
	if err != nil {
		panic(err)
	}
	fmt.Println(d)
	// Output:
	// change status.containerStatuses[name=app].ready: true → false
}
