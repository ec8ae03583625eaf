// Package once tracks a job that has to succeed once, and that several
// callers may set out to do: one at a time makes it ([Job.Start] lets one
// in), the others find it under way or done; a run that fails leaves it
// to be made again by the next caller. The bus keeps one for the listing
// of the states an earlier run left pending in the store.
//
// Invariant: a Job is done only after a Finish with a nil error; it is
// under way from the Start that let its caller in until that caller's
// Finish; while it is under way or done, Start lets no one in.
//
// A Job is not safe for concurrent use: its owner guards it (the bus's
// lock). Its zero value is a job not started.
package once

// Job is a job that has to succeed once; its zero value is not started.
type Job struct {
	state uint8
}

const (
	notStarted uint8 = iota
	underWay
	done
)

// Start marks the job under way and reports true if it is neither under
// way nor done; else it reports false and changes nothing.
func (j *Job) Start() bool {
	if j.state != notStarted {
		return false
	}
	j.state = underWay
	return true
}

// Finish ends the run that Start let in: the job is done if err is nil,
// else not started, to be made again.
func (j *Job) Finish(err error) {
	j.state = done
	if err != nil {
		j.state = notStarted
	}
}

// UnderWay reports whether a run of the job is under way.
func (j *Job) UnderWay() bool { return j.state == underWay }

// Done reports whether the job has succeeded.
func (j *Job) Done() bool { return j.state == done }
