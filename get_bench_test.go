package opbus

import (
	"testing"
)

// BenchmarkGet measures typed reads of the Pod fixture, as a handler makes
// them: a string by key, a number as an int, a keyed list element, and a
// part decoded into a struct through its JSON form.
func BenchmarkGet(b *testing.B) {
	pod := loadFixture(b, "pod-new.json").(map[string]any)
	b.Run("string", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Get[string](pod, "spec.containers[name=app].image"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("int", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Get[int](pod, "status.containerStatuses[name=app].restartCount"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("struct", func(b *testing.B) {
		type containerStatus struct {
			Name         string         `json:"name"`
			Ready        bool           `json:"ready"`
			RestartCount int            `json:"restartCount"`
			State        map[string]any `json:"state"`
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Get[[]containerStatus](pod, "status.containerStatuses"); err != nil {
				b.Fatal(err)
			}
		}
	})
}
