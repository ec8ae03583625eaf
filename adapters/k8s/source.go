package k8s

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/openapi"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/klog/v2"

	"github.com/opbus/opbus"
)

// Source watches Kubernetes objects for a [opbus.Bus] and writes back what
// the bus keeps: each object's record in [AnnotationRecord], its statuses
// as conditions or as [AnnotationStatus] and Events, and its [Finalizer].
//
// Create it with [New], build the bus with [Source.BusOptions], register
// handlers, then call [Source.Run]. A Source runs once.
type Source struct {
	opts    Options
	name    string
	log     *slog.Logger
	dyn     dynamic.Interface
	disc    discovery.DiscoveryInterface
	openapi openapi.ClientWithContext
	events  corev1client.EventsGetter
	leases  coordinationv1client.LeasesGetter
	store   *store
	sink    *sink

	refusals refusals
	eventLog eventLog
	failures *failureEvents // the Events of handler failures (failureevents.go)

	mu    sync.Mutex
	ran   bool
	kinds map[string]*resource // by key kind; set once by Run
	watch *watch               // the watch of the running lead, nil outside one

	sharder  *sharder       // the shard ring membership of Run, with Options.Shards (shardrun.go)
	shardSel shardSelection // the shard selector of the sharded informers (shardinformer.go)

	ignored     []string // the bus's Ignore, as BusOptions saw it
	userRelated bool     // the bus has a Related function of the user's, as BusOptions saw it

	probe probeState                // what /readyz reports (probes.go)
	bus   atomic.Pointer[opbus.Bus] // the bus Run runs, for /explain (explain.go); nil before Run
	fence atomic.Pointer[fence]     // the lead's check of its Lease (fence.go); nil without election

	names *names          // what it writes, after its name
	ours  map[string]bool // condition types the sink writes; set by Run before the bus starts

	mapper  *restmapper.DeferredDiscoveryRESTMapper // kinds to resources, for Clients (client.go)
	applied applies                                 // what Clients applied (client.go)
	// deciders lists, by key kind, the handlers that run on its objects'
	// creates and updates: their conditions are Unknown until they run.
	// Set by Run with ours.
	deciders map[string][]string
	// legacy holds the former spellings of the types in ours, which the
	// sink removes; set by Run with ours.
	legacy map[string]bool
}

// DefaultQPS and DefaultBurst are the client-side rate limit of a Source
// whose [Options].Config sets none: none at all (a negative QPS), as
// controller-runtime's default is, on SIG API Machinery's advice: the API
// server's priority and fairness protects it, and the bus bounds the
// writes in flight (opbus.Options.Writers, Workers). A token bucket would
// cap an operator that writes a record for each change it handles below
// the rate of changes it is given (client-go's own default, 5 a second,
// by far). Set Config.QPS and Burst to have one.
const (
	DefaultQPS   = -1
	DefaultBurst = 0
)

// New returns a Source for opts. It checks the options and builds clients
// but does not contact the API server; [Source.Run] does.
func New(opts *Options) (*Source, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	s := &Source{opts: *opts, name: opts.Name, log: opts.Logger}
	s.failures = newFailureEvents(s)
	s.opts.Resources = slices.Clone(opts.Resources)
	if s.name == "" {
		s.name = defaultName
	}
	s.names = namesFor(s.name)
	if opts.SummaryCondition != "" {
		s.names.ready = s.names.condition(opts.SummaryCondition)
	}
	if opts.NoSummaryCondition {
		s.names.ready = ""
	}
	for id, c := range opts.Conditions {
		if c.Type != "" {
			if s.names.types == nil {
				s.names.types = map[string]string{}
			}
			s.names.types[id] = c.Type
		}
		if c.AbnormalTrue {
			if s.names.abnormal == nil {
				s.names.abnormal = map[string]bool{}
			}
			s.names.abnormal[id] = true
		}
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cfg := rest.CopyConfig(opts.Config)
	if cfg.QPS == 0 && cfg.Burst == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = DefaultQPS, DefaultBurst
	}
	// One HTTP client for all the Source's clients: Options.HTTPClient,
	// or one built from the configuration whose connections write nothing
	// once the fence is lost (fence.go). The Lease is written through a
	// client of its own. Every request that writes passes the fence.
	hc, lhc := opts.HTTPClient, opts.HTTPClient
	var err error
	if hc == nil {
		fcfg := rest.CopyConfig(cfg)
		fcfg.Dial = s.fencedDial(cfg.Dial)
		if hc, err = rest.HTTPClientFor(fcfg); err != nil {
			return nil, fmt.Errorf("k8s: %w", err)
		}
		lhc = hc
		if opts.LeaderElection != nil {
			if lhc, err = rest.HTTPClientFor(cfg); err != nil {
				return nil, fmt.Errorf("k8s: %w", err)
			}
		}
	}
	if s.leases, err = coordinationv1client.NewForConfigAndClient(cfg, lhc); err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	hc = s.fencedClient(hc)
	if s.dyn, err = dynamic.NewForConfigAndClient(cfg, hc); err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	s.disc, s.openapi = disc, openapi.NewClientWithContext(disc.RESTClient())
	s.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	core, err := corev1client.NewForConfigAndClient(cfg, hc)
	if err != nil {
		return nil, fmt.Errorf("k8s: %w", err)
	}
	s.events = core
	s.store = &store{s: s}
	s.sink = &sink{s: s}
	return s, nil
}

// Store returns the Source's [opbus.Store], which keeps each record in
// [AnnotationRecord] on its object. It works while Run runs: it reads
// records from the informers' caches, not from the API server.
func (s *Source) Store() opbus.Store { return s.store }

// Sink returns the Source's [opbus.StatusSink], which writes statuses as
// each [Resource]'s [StatusMode] says. It is also an [opbus.DeleteSink]
// that removes [Finalizer].
func (s *Source) Sink() opbus.StatusSink { return s.sink }

// BusOptions returns a copy of o (nil means the zero Options) completed for
// this Source: its Store and Sink, [ListKeys] added to o.ListKeys (o's own
// win), [Ignore] added to o.Ignore, the Source's Logger if o has none, as
// the Observer one that passes every measurement on to o's Observer, to
// [Options].Metrics and to the adapter (which emits an Event of reason
// [ReasonHandlerFailed] for each handler failure), and
// [Incarnation] as the Incarnation, replacing o's, Runs that refuses every
// handler once a leader's Lease may be another replica's (besides o's own
// Runs; see [Options].Fence), and, when a resource is
// [Resource].Owned, Related to relate its objects to their controllers
// (besides o's own Related): the adapter writes a
// record, a status or a finalizer only on the object of the incarnation
// they belong to, which it knows by that ID. Pass the result to
// [opbus.New]; a bus built otherwise must set Incarnation to [Incarnation]
// too.
func (s *Source) BusOptions(o *opbus.Options) *opbus.Options {
	out := &opbus.Options{}
	if o != nil {
		*out = *o
	}
	out.Store, out.Sink = s.store, s.sink
	keys := maps.Clone(ListKeys)
	maps.Copy(keys, out.ListKeys)
	out.ListKeys = keys
	ignore := slices.Clone(out.Ignore)
	user := slices.Clone(out.Ignore)
	for _, p := range Ignore {
		if !slices.Contains(ignore, p) {
			ignore = append(ignore, p)
		}
	}
	out.Ignore = ignore
	if out.Logger == nil {
		out.Logger = s.opts.Logger
	}
	out.Logger = aggregate(out.Logger) // one line for a burst of coalesced backlogs
	var metrics opbus.Observer
	if s.opts.Metrics != nil && out.Observer != opbus.Observer(s.opts.Metrics) {
		metrics = s.opts.Metrics
	}
	out.Observer = observerOf(out.Observer, metrics, s.failures)
	out.Incarnation = Incarnation
	// The fence (fence.go): no handler runs once the Lease may be another
	// replica's.
	runs := out.Runs
	out.Runs = func(handler string) bool { return s.holds() && (runs == nil || runs(handler)) }
	if slices.ContainsFunc(s.opts.Resources, func(r Resource) bool { return r.Owned || len(r.Referenced) > 0 }) {
		user := out.Related
		out.Related = func(key opbus.Key, obj map[string]any) []opbus.Key {
			var keys []opbus.Key
			if user != nil {
				keys = user(key, obj)
			}
			return append(append(keys, s.controllerOf(key, obj)...), s.referrersOf(key, obj)...)
		}
	}
	s.mu.Lock()
	s.ignored = user
	s.userRelated = o != nil && o.Related != nil
	s.mu.Unlock()
	return out
}

// Incarnation returns an object's metadata.uid, which tells apart two
// objects that had the same name one after the other: for the bus, they
// are two incarnations of one key, which share nothing. [Source.BusOptions]
// sets it as [opbus.Options].Incarnation.
func Incarnation(obj map[string]any) string { return uid(obj) }

// Run watches the resources and runs bus until ctx ends, then returns
// after the bus has drained (see [opbus.Bus.Run]). Before the bus starts,
// Run asks the API server about each resource, checks the handlers' kinds
// and fields against what it serves (see "Checked at startup" in the
// package documentation), and declares to the bus the paths it writes that
// depend on the handlers registered (the conditions of their slots, the
// finalizers); handlers must be registered before.
//
// With [Options].LeaderElection, Run watches and dispatches only while it
// holds the Lease. When ctx ends it stops, then releases the Lease, so
// that another replica takes over at once. If it loses the Lease (it could
// not renew it in time), it stops and returns an error matching
// [ErrLeadershipLost]: a bus runs once, so the program should exit and
// start again, as Kubernetes restarts a container that exits.
//
// Run returns nil after a clean stop. A Source runs once.
func (s *Source) Run(ctx context.Context, bus *opbus.Bus) error {
	if bus == nil {
		return errors.New("k8s: Run: nil bus")
	}
	s.mu.Lock()
	if s.ran {
		s.mu.Unlock()
		return errors.New("k8s: Run called twice: a Source and its bus run once")
	}
	s.ran = true
	s.mu.Unlock()
	s.bus.Store(bus)
	s.probe.set(func(p *probeState) { p.started, p.electing = true, s.opts.LeaderElection != nil })
	defer s.probe.set(func(p *probeState) { p.stopped = true })

	ctx = klog.NewContext(ctx, logr.FromSlogHandler(s.log.Handler()))
	if err := s.prepare(ctx, bus); err != nil {
		return err
	}
	if s.opts.LeaderElection != nil {
		return s.elect(ctx, bus)
	}
	if s.opts.Shards != nil {
		return s.shard(ctx, bus)
	}
	if s.opts.Fence == nil {
		return s.lead(ctx, bus)
	}
	fctx, end := s.fenced(ctx, s.opts.Fence, "the manager's Lease")
	err := s.lead(fctx, bus)
	end()
	if cause := context.Cause(fctx); leaseLost(cause) && ctx.Err() == nil {
		return errors.Join(cause, err)
	}
	return err
}

// prepare discovers the resources, works out what the sink writes, declares
// it to the bus and builds (but does not start) the informers.
func (s *Source) prepare(ctx context.Context, bus *opbus.Bus) error {
	begin := time.Now()
	var rs []*resource
	kinds := map[string]*resource{}
	for _, cfg := range s.opts.Resources {
		r, err := discover(s.disc, s.dyn, cfg)
		if err != nil {
			return err
		}
		if other, dup := kinds[r.keyKind]; dup {
			return fmt.Errorf("k8s: resources %s and %s both hold kind %s: watch one version of each kind", other.gvr, r.gvr, r.keyKind)
		}
		kinds[r.keyKind] = r
		rs = append(rs, r)
	}
	subs := bus.Subscriptions()
	if err := checkKinds(subs, rs); err != nil {
		return err
	}
	if err := s.relatedNames(bus, subs, kinds); err != nil {
		return err
	}
	if err := s.checkFields(ctx, subs, rs); err != nil {
		return err
	}
	if err := s.markReadOnly(subs, rs); err != nil {
		return err
	}
	if err := s.declare(bus, rs); err != nil {
		return err
	}
	for _, r := range rs {
		if s.opts.Shards != nil && !r.readOnly && !r.cfg.Owned && !r.seenEverywhere() {
			// Selected by the API server where it can: an owned child's
			// shard is its owner's, which the server cannot tell, and a
			// referenced object is seen by every replica.
			r.buildShardedInformers(s.dyn, &s.shardSel)
		} else if s.opts.Informers == nil {
			r.buildInformers(s.dyn)
		} else if err := r.takeInformer(ctx, s.opts.Informers); err != nil {
			return err
		}
	}
	if err := prepareReferences(rs, kinds); err != nil {
		return err
	}
	s.mu.Lock()
	s.kinds = kinds
	s.mu.Unlock()
	names := make([]string, len(rs))
	for i, r := range rs {
		names[i] = fmt.Sprintf("%s (%s, status: %v, finalizer: %v)", r.gvr, r.keyKind, r.mode, r.finalizer)
	}
	s.log.Debug("k8s: resources discovered", "resources", strings.Join(names, "; "), "took", time.Since(begin))
	return nil
}

// maxIgnored is the number of ignored and list-key paths a bus supports
// (opbus.NewComparer refuses more).
const maxIgnored = 64

// declare works out what the sink writes on the resources rs and declares
// it to the bus: the finalizers on every kind that has one, and the
// condition types of the slots on the kinds it writes conditions to only
// (see [opbus.Bus.IgnoreKind]), so that the conditions of other kinds,
// such as a Pod's Ready, still run handlers.
func (s *Source) declare(bus *opbus.Bus, rs []*resource) error {
	var conds []*resource // the resources the adapter writes conditions to
	for _, r := range rs {
		if !r.readOnly && r.mode == StatusConditions {
			conds = append(conds, r)
		}
	}

	subs := bus.Subscriptions()
	var ignore []string
	for _, r := range rs {
		if !r.cfg.Finalizer {
			continue
		}
		for _, sub := range subs {
			if slices.Contains(sub.Types, opbus.Delete) && (len(sub.Kinds) == 0 || slices.Contains(sub.Kinds, r.keyKind)) {
				r.finalizer = true
			}
		}
		if !r.finalizer {
			s.log.Warn("k8s: Finalizer is set but no handler handles deletes of this kind: no finalizer is added",
				"resource", r.gvr.String(), "kind", r.keyKind)
		} else if !slices.Contains(ignore, finalizersPath) {
			ignore = append(ignore, finalizersPath)
		}
	}
	s.ours = map[string]bool{}
	var condIgnore []string
	if len(conds) > 0 {
		slots := []string{"opbus"} // the bus's own, for records it cannot read
		for _, sub := range subs {
			slots = append(slots, sub.ID)
		}
		slots = append(slots, s.opts.Slots...)
		if err := s.checkConditionSlots(slots); err != nil {
			return err
		}
		types, err := conditionTypes(s.names, slots)
		if err != nil {
			return err
		}
		if s.names.ready != "" {
			s.ours[s.names.ready] = true
			condIgnore = append(condIgnore, conditionPath(s.names.ready))
		}
		for _, id := range slots {
			if t := types[id]; !s.ours[t] {
				s.ours[t] = true
				condIgnore = append(condIgnore, conditionPath(t))
			}
		}
		s.legacy = legacyConditionTypes(s.names, slots, s.ours)
		s.deciders = map[string][]string{}
		for _, r := range conds {
			for _, sub := range subs {
				runs := len(sub.Kinds) == 0 || slices.Contains(sub.Kinds, r.keyKind)
				if runs && (len(sub.Types) == 0 || slices.Contains(sub.Types, opbus.Create) || slices.Contains(sub.Types, opbus.Update)) {
					s.deciders[r.keyKind] = append(s.deciders[r.keyKind], sub.ID)
				}
			}
		}
	}
	if err := checkSubscriptions(subs, ignore); err != nil {
		return err
	}
	if err := checkConditionSubscriptions(subs, rs, condIgnore); err != nil {
		return err
	}
	if len(conds) > 0 {
		if err := bus.Collect(generationCollector, s.sink.collect); err != nil {
			return fmt.Errorf("k8s: registering the collector of observed generations: %w", err)
		}
	}
	if len(ignore) > 0 {
		if err := bus.Ignore(ignore...); err != nil {
			return fmt.Errorf("k8s: declaring the paths the adapter writes: %w", err)
		}
	}
	for _, r := range conds {
		if err := bus.IgnoreKind(r.keyKind, condIgnore...); err != nil {
			// The paths are the adapter's own and valid: the bus
			// refused their number.
			ids := make([]string, 0, len(subs)+len(s.opts.Slots))
			for _, sub := range subs {
				ids = append(ids, sub.ID)
			}
			ids = append(ids, s.opts.Slots...)
			return fmt.Errorf("k8s: too many status slots for conditions on %s: each of the %d slots (handlers and Options.Slots: %s) and Ready is a condition path the bus must ignore, "+
				"%d in all, and a bus supports at most %d ignored and list-key paths, its own Ignore and ListKeys included; "+
				"register fewer handlers on this bus, or set Status: StatusAnnotation: %w",
				r.gvr.GroupResource(), len(ids), strings.Join(ids, ", "), len(condIgnore), maxIgnored, err)
		}
	}
	for _, r := range rs {
		var ours map[string]bool
		if r.mode == StatusConditions {
			ours = ownConditions(s.ours, s.legacy)
		}
		own, err := newOwnWrites(s.names, r.finalizer, ours)
		if err != nil {
			return fmt.Errorf("k8s: %w", err)
		}
		r.own = own
	}
	return nil
}

// checkConditionSubscriptions refuses a handler subscribed to a condition
// the adapter writes (ignore) when every kind it runs on is one the
// adapter writes conditions to: it would never fire.
func checkConditionSubscriptions(subs []opbus.Subscription, rs []*resource, ignore []string) error {
	for _, sub := range subs {
		onlyConds := true
		for _, r := range rs {
			if (len(sub.Kinds) == 0 || slices.Contains(sub.Kinds, r.keyKind)) && (r.readOnly || r.mode != StatusConditions) {
				onlyConds = false
			}
		}
		if onlyConds {
			if err := checkSubscriptions([]opbus.Subscription{sub}, ignore); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkSubscriptions refuses a handler subscribed to a path the adapter
// writes and therefore ignores: it would never fire.
func checkSubscriptions(subs []opbus.Subscription, ignore []string) error {
	for _, p := range ignore {
		ip := opbus.MustParsePath(p).String()
		for _, sub := range subs {
			for _, f := range sub.Fields {
				// The adapter's paths name no wildcard: a field is
				// ignored whole if it is one of them or lies under one.
				if fs := f.String(); fs == ip || strings.HasPrefix(fs, ip+".") || strings.HasPrefix(fs, ip+"[") {
					return fmt.Errorf("k8s: handler %q subscribes to %s, which the adapter writes itself and the bus therefore ignores: it would never fire", sub.ID, f)
				}
			}
		}
	}
	return nil
}

// resourceFor returns the resource of key's kind.
func (s *Source) resourceFor(key opbus.Key) (*resource, error) {
	s.mu.Lock()
	kinds := s.kinds
	s.mu.Unlock()
	if kinds == nil {
		return nil, fmt.Errorf("k8s: %v: the Source is not running", key)
	}
	r, ok := kinds[key.Kind]
	if !ok {
		return nil, fmt.Errorf("k8s: %v: no watched resource holds kind %q (kinds: %s)", key, key.Kind, strings.Join(slices.Sorted(maps.Keys(kinds)), ", "))
	}
	return r, nil
}
