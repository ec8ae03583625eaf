package once

import (
	"errors"
	"testing"
)

func TestJob(t *testing.T) {
	var j Job
	check := func(step string, underWay, done bool) {
		t.Helper()
		if j.UnderWay() != underWay || j.Done() != done {
			t.Errorf("%s: got under way %v, done %v; want %v, %v", step, j.UnderWay(), j.Done(), underWay, done)
		}
	}
	check("zero", false, false)
	if !j.Start() {
		t.Fatalf("Start of a job not started: got false, want true")
	}
	check("started", true, false)
	if j.Start() {
		t.Errorf("Start of a job under way: got true, want false")
	}
	j.Finish(errors.New("failed"))
	check("failed", false, false)
	if !j.Start() {
		t.Fatalf("Start after a failure: got false, want true")
	}
	j.Finish(nil)
	check("succeeded", false, true)
	if j.Start() {
		t.Errorf("Start of a job done: got true, want false")
	}
}
