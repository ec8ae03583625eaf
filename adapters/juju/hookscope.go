package juju

import (
	"slices"

	"github.com/opbus/opbus"
)

// hookScope is what a dispatch may run, read and write, which depends on
// what Juju runs.
//
// An action runs only its own handlers, those that subscribe to the
// action field or a field under it: Juju runs actions even while the unit
// is in hook error, and a handler of config that fails in every hook must
// not fail every action too. The other handlers keep their records as
// they were.
//
// collect-metrics and meter-status-changed run in Juju's restricted
// context ([Kind.IsRestricted]), where every tool but juju-log (and
// add-metric in collect-metrics) is refused ("not implemented for
// restricted context"): config-get, state-get, state-set, status-get,
// status-set, is-leader and the relation tools among them. Such a hook
// runs only the handlers that subscribe to hook.event (or the whole hook
// field), as [OnHook] makes them, and in meter-status-changed those that
// subscribe to hook.meter-status or hook.meter-info, which only it
// carries, against a bus with no stored records;
// the document holds the hook, unit, app, model and, when subscribed to,
// containers, never config, leader or relations. Nothing is stored and no
// status is set, so the hook succeeds unless a handler fails.
type hookScope struct {
	// runs lists the handlers that may run; nil means every handler.
	runs map[string]bool
	// restricted is Juju's restricted context of collect-metrics and
	// meter-status-changed.
	restricted bool
}

// scopeOf returns the scope of the hook e runs for the handlers subs.
func scopeOf(e *Env, subs []opbus.Subscription) hookScope {
	var sc hookScope
	var own func(opbus.Path) bool
	switch e.Kind {
	case KindAction:
		own = func(p opbus.Path) bool { return len(p) > 0 && p[0].Kind == opbus.SegKey && p[0].Key == "action" }
	case KindCollectMetrics, KindMeterStatusChanged:
		sc.restricted = true
		fields := []string{"event"}
		if e.Kind == KindMeterStatusChanged {
			fields = append(fields, "meter-status", "meter-info") // only this hook has them
		}
		own = func(p opbus.Path) bool {
			return len(p) > 0 && p[0].Kind == opbus.SegKey && p[0].Key == "hook" &&
				(len(p) == 1 || (p[1].Kind == opbus.SegKey && slices.Contains(fields, p[1].Key)))
		}
	default:
		return sc
	}
	sc.runs = map[string]bool{}
	for _, s := range subs {
		if slices.ContainsFunc(s.Fields, own) {
			sc.runs[s.ID] = true
		}
	}
	return sc
}

// allows reports whether the handler id may run; it is [opbus.Options.Runs].
func (sc hookScope) allows(id string) bool { return sc.runs == nil || sc.runs[id] }
