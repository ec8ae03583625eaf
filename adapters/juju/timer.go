package juju

import "github.com/opbus/opbus"

// dueAt returns the [opbus.Options.Due] of a hook of kind k. A hook is one
// pass in a process of its own, so schedules follow hooks, not the clock:
// a handler that asked to run again ([opbus.Event.Again]) runs at the next
// hook, whatever delay it gave (what ops' event.defer() is used for), and
// a periodic handler ([opbus.On.Every]) runs at update-status, which Juju
// fires on its own period (update-status-hook-interval, 5 minutes by
// default), and at no other hook unless its fields changed.
func dueAt(k Kind) opbus.DueFunc {
	return func(_ opbus.Key, _ string, again bool) bool {
		return again || k == KindUpdateStatus
	}
}
