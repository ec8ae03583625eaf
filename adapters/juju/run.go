package juju

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/opbus/opbus"
	"github.com/opbus/opbus/adapters/juju/internal/charmmeta"
)

// Options configures [Run]. Nil options, and every zero field, mean what a
// charm run by Juju needs.
type Options struct {
	// Getenv reads the hook environment; nil means os.Getenv.
	Getenv func(string) string
	// Program is the program name, which names the hook when
	// JUJU_DISPATCH_PATH is not set; empty means os.Args[0].
	Program string
	// Runner runs the hook tools; nil means ExecRunner{}.
	Runner Runner
	// StateKey is the key of the unit's state that holds the bus's
	// records; empty means [DefaultStateKey]. At most [MaxStateKey] bytes.
	StateKey string
	// Endpoints lists the charm's relation endpoints. Nil means those in
	// metadata.yaml or charmcraft.yaml in the charm directory
	// ([ReadEndpoints]; see "What is read" in the package documentation
	// for where the charm directory is found). They are read when a
	// handler subscribes to every endpoint, and checked against the
	// endpoints handlers name.
	Endpoints []string
	// Containers lists the charm's workload containers. Nil means those
	// in metadata.yaml or charmcraft.yaml in the charm directory
	// ([ReadContainers]). Those handlers subscribe to are probed for the
	// document's containers field.
	Containers []string
	// Read lists document fields (paths, as handlers subscribe to them)
	// to read at every hook beside those handlers and collectors subscribe
	// to ([opbus.Bus.Collect] takes a collector's fields): for code that
	// reads the document outside a handler or collector. They are checked
	// as subscriptions are; containers fields are not allowed (a container
	// is probed for the handlers and collectors that subscribe to it).
	Read []string
	// PebbleTimeout bounds each request to a workload container's Pebble
	// and each wait for a change, for the containers of [Hook.Container];
	// zero means $OPBUS_PEBBLE_TIMEOUT, or [DefaultPebbleTimeout] when
	// that is empty.
	PebbleTimeout time.Duration
	// Bus configures the bus. Run sets its Store (the unit's state) and
	// Logger (juju-log).
	Bus *opbus.Options
	// LogLevel is the lowest level logged with juju-log; nil means Info.
	// The bus's own logs are sent from Warn up unless LogLevel is Debug or
	// lower: every hook is a new Bus, whose Info logs would repeat on every
	// hook what Juju's status history already shows.
	LogLevel slog.Leveler
	// Stderr receives the log lines juju-log fails to take; nil means
	// os.Stderr, which Juju also records.
	Stderr io.Writer
}

// Hook is what a handler can use of the running hook besides its event:
// the hook environment, the hook tools (relation-set,
// application-version-set, action-set, …) and the logger. Relation and
// state writes made through Tools are applied by Juju only if the hook
// succeeds.
type Hook struct {
	// Env is the hook environment.
	Env *Env
	// Tools runs the hook tools.
	Tools Tools
	// Logger writes with juju-log at the level [Options.LogLevel] allows.
	Logger *slog.Logger
	// PebbleDir holds each workload container's Pebble socket, in
	// <PebbleDir>/<name>/pebble.socket: $OPBUS_PEBBLE_DIR, or
	// [DefaultPebbleDir] when that is empty. See [Hook.Container].
	PebbleDir string
	// PebbleTimeout is the Timeout of the containers of [Hook.Container]:
	// [Options.PebbleTimeout] or $OPBUS_PEBBLE_TIMEOUT; zero means
	// [DefaultPebbleTimeout].
	PebbleTimeout time.Duration

	charm *charmmeta.Charm // what the charm declares; nil when unknown
}

type hookKey struct{}

// FromContext returns the Hook of the dispatch a handler's ctx belongs to,
// or nil outside [Run].
func FromContext(ctx context.Context) *Hook {
	h, _ := ctx.Value(hookKey{}).(*Hook)
	return h
}

// Run runs one hook or action of a charm: all a charm's main calls (see
// [Main]). It reads the hook environment, makes a new [opbus.Bus] whose
// store is the unit's state, lets setup register the handlers, builds the
// document of what the unit sees, dispatches it, stores the bus's records
// and publishes the status. It returns an error when the hook must fail,
// and the process must then exit non-zero so that Juju discards the hook's
// state-set and relation-set and retries it. The package documentation
// describes each step.
//
// ctx is passed to the handlers and the hook tools; cancelling it stops
// the tool running and fails the hook.
func Run(ctx context.Context, setup func(*opbus.Bus) error, opts *Options) error {
	if opts == nil {
		opts = &Options{}
	}
	if setup == nil {
		return errors.New("juju: Run: nil setup function")
	}
	getenv, program := opts.Getenv, opts.Program
	if getenv == nil {
		getenv = os.Getenv
	}
	if program == "" && len(os.Args) > 0 {
		program = os.Args[0]
	}
	env, err := ParseEnv(getenv, program)
	if err != nil {
		return err
	}
	stateKey := opts.StateKey
	if stateKey == "" {
		stateKey = DefaultStateKey
	}
	if len(stateKey) > MaxStateKey {
		return fmt.Errorf("juju: Options.StateKey is %d bytes, more than Juju's limit of %d", len(stateKey), MaxStateKey)
	}
	stderr := opts.Stderr
	if stderr == nil {
		stderr = os.Stderr
	}
	level := opts.LogLevel
	if level == nil {
		level = slog.LevelInfo
	}
	busLevel := level
	if level.Level() > slog.LevelDebug {
		busLevel = max(level.Level(), slog.LevelWarn)
	}
	pebbleTimeout := opts.PebbleTimeout
	if pebbleTimeout < 0 {
		return fmt.Errorf("juju: Options.PebbleTimeout is %v: expected a positive duration, or 0 for the default", pebbleTimeout)
	}
	if pebbleTimeout == 0 {
		if pebbleTimeout, err = parsePebbleTimeout(getenv(PebbleTimeoutEnv)); err != nil {
			return err
		}
	}
	tools := Tools{Runner: opts.Runner, hook: env}
	r := &run{
		env:       env,
		tools:     tools,
		log:       slog.New(NewLogHandler(&tools, stderr, &slog.HandlerOptions{Level: level})),
		store:     &stateStore{tools: tools, key: stateKey},
		pebbleDir: getenv(PebbleDirEnv),
	}
	r.pebbleTimeout = pebbleTimeout
	var bo opbus.Options
	if opts.Bus != nil {
		bo = *opts.Bus
	}
	bo.Store = r.store
	if env.Kind.IsRestricted() {
		bo.Store = opbus.NewMemoryStore() // state-get is refused there
	}
	bo.Runs = func(id string) bool { return r.scope.allows(id) }
	if bo.Due == nil {
		bo.Due = dueAt(env.Kind) // timer.go
	}
	bo.Logger = slog.New(NewLogHandler(&tools, stderr, &slog.HandlerOptions{Level: busLevel}))
	if err := r.setup(setup, &bo, opts, program); err != nil {
		r.log.ErrorContext(ctx, "juju: the charm's handlers cannot run", "hook", env.Name, "err", err)
		return err
	}
	if err := r.run(ctx); err != nil {
		r.logFailure(ctx, err)
		return err
	}
	return nil
}

// setup makes the bus, registers the handlers and plans what to read.
func (r *run) setup(setup func(*opbus.Bus) error, bo *opbus.Options, opts *Options, program string) error {
	endpoints, containers := opts.Endpoints, opts.Containers
	var err error
	if r.bus, err = opbus.New(bo); err != nil {
		return fmt.Errorf("juju: %w", err)
	}
	if err := setup(r.bus); err != nil {
		return fmt.Errorf("juju: setting up the handlers: %w", err)
	}
	charm := declared{endpoints: endpoints}
	dir := findCharmDir(r.env, program)
	switch {
	case dir == "":
		charm.endpointsErr = errors.New("JUJU_CHARM_DIR is not set, and neither the working directory nor the program's holds metadata.yaml or charmcraft.yaml")
	case endpoints == nil:
		charm.endpoints, charm.endpointsErr = ReadEndpoints(dir)
	}
	if dir != "" {
		var err error
		if charm.options, err = readConfigOptions(dir); err != nil {
			r.log.Debug("juju: the charm's config options are not known: config fields are not checked", "err", err)
		}
		if charm.params, err = readActionParams(dir); err != nil {
			r.log.Debug("juju: the charm's action parameters are not known: action.params fields are not checked", "err", err)
		}
		if r.charm, err = charmmeta.Read(dir); err != nil {
			r.log.Debug("juju: the charm's option and parameter defaults are not known: LoadConfig and LoadParams use none", "err", err)
		}
	}
	subs := r.bus.Subscriptions()
	r.scope = scopeOf(r.env, subs)
	if r.env.Kind == KindUpgradeCharm {
		r.store.upgrade = newUpgrade(subs)
	}
	planned := subs
	if cs := r.collectorReads(); len(cs) > 0 {
		planned = append(slices.Clone(subs), cs...)
	}
	if len(opts.Read) > 0 {
		read := opbus.Subscription{ID: "Options.Read", Kinds: []string{ObjectUnit}}
		for _, f := range opts.Read {
			p, err := opbus.ParsePath(f)
			if err != nil {
				return fmt.Errorf("juju: Options.Read: %w", err)
			}
			if len(p) > 0 && p[0] == opbus.MapKey("containers") {
				return fmt.Errorf("juju: Options.Read: %s: the containers are probed for handlers that subscribe to them only", f)
			}
			read.Fields = append(read.Fields, p)
		}
		planned = append(slices.Clone(planned), read)
	}
	if r.env.Kind == KindPebbleReady {
		r.store.ready = readyHandlers(subs, r.env.Workload)
	}
	if r.plan, err = newPlan(planned, charm); err != nil {
		return r.namedReader(err, subs, charm)
	}
	if err := r.planContainers(containers, dir); err != nil {
		return r.namedReader(err, subs, charm)
	}
	return nil
}

// namedReader returns err, an error of a plan made from the handlers'
// subscriptions, the collectors' fields and Options.Read, worded for what
// named the field: when the handlers' subscriptions alone plan, the field
// is a collector's or Options.Read's, and err says "handler" of it.
func (r *run) namedReader(err error, subs []opbus.Subscription, charm declared) error {
	if _, herr := newPlan(subs, charm); herr != nil {
		return err
	}
	msg := err.Error()
	for _, c := range r.bus.Collectors() {
		if !slices.ContainsFunc(subs, func(s opbus.Subscription) bool { return s.ID == c.ID }) {
			msg = strings.Replace(msg, fmt.Sprintf("handler %q", c.ID), fmt.Sprintf("collector %q", c.ID), 1)
		}
	}
	msg = strings.Replace(msg, `handler "Options.Read" subscribes to`, "Options.Read names", 1)
	return errors.New(msg)
}

// logFailure logs why the hook fails with juju-log at ERROR: one line per
// failed handler, or the error.
func (r *run) logFailure(ctx context.Context, err error) {
	errs := []error{err}
	var joined interface{ Unwrap() []error }
	if errors.As(err, &joined) {
		errs = joined.Unwrap()
	}
	msg := "juju: the hook fails: Juju discards its state-set and relation-set and retries it"
	if r.env.Kind == KindAction {
		msg = "juju: the action fails: Juju discards its state-set and relation-set and does not run it again"
	}
	for _, e := range errs {
		r.log.ErrorContext(ctx, msg, "hook", r.env.Name, "err", e)
	}
}

// Main runs [Run] with the process's environment and returns if the hook
// succeeded. Otherwise it prints the error on standard error and exits
// with status 1, which tells Juju the hook failed. SIGTERM and interrupt
// cancel the hook's context. A charm's main is
//
//	func main() { juju.Main(setup, nil) }
//
// Given the argument [ExplainArg] (./dispatch explain), it runs [Explain]
// on standard output instead of a hook.
func Main(setup func(*opbus.Bus) error, opts *Options) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	var err error
	if len(os.Args) == 2 && os.Args[1] == ExplainArg {
		err = Explain(ctx, os.Stdout, setup, opts)
	} else {
		err = Run(ctx, setup, opts)
	}
	stop()
	if err != nil {
		w := io.Writer(os.Stderr)
		if opts != nil && opts.Stderr != nil {
			w = opts.Stderr
		}
		fmt.Fprintln(w, err)
		os.Exit(1)
	}
}

// run is one dispatch of a hook.
type run struct {
	env   *Env
	tools Tools
	log   *slog.Logger
	store *stateStore
	bus   *opbus.Bus
	plan  *plan

	pebbleDir     string // $OPBUS_PEBBLE_DIR
	scope         hookScope
	charm         *charmmeta.Charm // what the charm declares; nil when unknown
	pebbleTimeout time.Duration    // Options.PebbleTimeout or $OPBUS_PEBBLE_TIMEOUT
}

func (r *run) run(ctx context.Context) error {
	e := r.env
	doc, leader, err := (&reader{tools: r.tools, env: e, plan: r.plan, pebbleDir: r.pebbleDir, restricted: r.scope.restricted}).document(ctx)
	if err != nil {
		return within(err, "juju: %s: reading what the unit sees", e.Name)
	}
	r.log.DebugContext(ctx, "juju: dispatching", "hook", e.Name, "event", doc["hook"].(map[string]any)["event"], "endpoints", r.plan.endpoints)
	hctx := context.WithValue(ctx, hookKey{}, &Hook{Env: e, Tools: r.tools, Logger: r.log, PebbleDir: r.pebbleDir, PebbleTimeout: r.pebbleTimeout, charm: r.charm})

	keys := []opbus.Key{{Kind: ObjectUnit, Name: e.Unit}}
	if leader && r.plan.app {
		keys = append(keys, opbus.Key{Kind: ObjectApplication, Name: e.App})
	}
	var errs []error
	for _, k := range keys {
		if err := r.bus.Dispatch(hctx, k, doc); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("juju: %s failed: %w", e.Name, err)
	}
	// A slot at error level without a handler error (a collector's, or a
	// handler returning opbus.ErrorStatus with a nil error) cannot be shown with
	// status-set: it fails the hook too.
	for _, k := range keys {
		overall, slots, err := r.bus.Status(ctx, k)
		if err != nil {
			return err
		}
		if overall.Level == opbus.LevelError {
			return fmt.Errorf("juju: %s failed: %v has slots at error level, which status-set cannot show: %s", e.Name, k, errorSlots(slots))
		}
	}
	if r.scope.restricted {
		return nil // no state and no status in Juju's restricted context
	}
	if _, err := r.store.flush(ctx); err != nil {
		return within(err, "juju: %s: storing the records", e.Name)
	}
	// upgrade-charm may have removed every application handler, with
	// their slots: the leader still sets the application's status from
	// the slots that remain.
	if app := (opbus.Key{Kind: ObjectApplication, Name: e.App}); !slices.Contains(keys, app) && r.store.cleared(app) {
		if leader, err = r.tools.IsLeader(ctx); err != nil {
			return within(err, "juju: %s: setting the %s status", e.Name, app.Kind)
		}
		if leader {
			keys = append(keys, app)
		}
	}
	for _, k := range keys {
		if err := r.publish(ctx, k, r.store.cleared(k)); err != nil {
			return within(err, "juju: %s: setting the %s status", e.Name, k.Kind)
		}
	}
	return nil
}

// errorSlots names the slots at error level and their messages.
func errorSlots(slots opbus.Slots) string {
	s := ""
	for _, name := range slots.Names() {
		if st := slots[name]; st.Level == opbus.LevelError {
			if s != "" {
				s += "; "
			}
			s += name + ": " + st.Message
		}
	}
	return s
}

// publish sets the status of key's unit or application with status-set,
// only when it differs from what status-get returns. A zero or unknown
// overall status (no slot holds a status) sets nothing, unless cleared
// says upgrade-charm dropped slots of removed handlers from key's record:
// then, since status-set cannot set unknown, it sets active with no
// message, so that the unit does not keep showing the status of a handler
// that is gone.
func (r *run) publish(ctx context.Context, key opbus.Key, cleared bool) error {
	overall, _, err := r.bus.Status(ctx, key)
	if err != nil {
		return err
	}
	if overall.Level == opbus.LevelUnknown {
		if !cleared {
			return nil
		}
		overall = opbus.Active("")
	}
	level, msg := overall.Level.String(), CleanMessage(overall.Message)
	app := key.Kind == ObjectApplication
	var cur StatusInfo
	if app {
		info, err := r.tools.StatusGetApp(ctx)
		if err != nil {
			return err
		}
		cur = info.StatusInfo
	} else if cur, err = r.tools.StatusGet(ctx); err != nil {
		return err
	}
	if cur.Status == level && cur.Message == msg {
		return nil
	}
	if app {
		err = r.tools.StatusSetApp(ctx, level, msg)
	} else {
		err = r.tools.StatusSet(ctx, level, msg)
	}
	if err != nil {
		return err
	}
	r.log.InfoContext(ctx, "juju: status changed", "of", key.String(), "status", overall.String(), "was", statusString(cur))
	return nil
}

// statusString formats a status read with status-get.
func statusString(s StatusInfo) string {
	if s.Message == "" {
		return s.Status
	}
	return s.Status + ": " + s.Message
}

// within wraps err in what the run was doing, without repeating the
// "juju: " prefix of err's own message; errors.Is and errors.As see err.
func within(err error, format string, args ...any) error {
	return &contextError{msg: fmt.Sprintf(format, args...) + ": " + strings.TrimPrefix(err.Error(), "juju: "), err: err}
}

type contextError struct {
	msg string
	err error
}

func (e *contextError) Error() string { return e.msg }
func (e *contextError) Unwrap() error { return e.err }

// collectorReads returns the fields the bus's collectors read, as
// subscriptions of the unit's document, so that the adapter reads them for
// the collectors as it does for handlers (a collector judges the unit; one
// that also sees the application's document reads the same fields there).
func (r *run) collectorReads() []opbus.Subscription {
	cs := r.bus.Collectors()
	for i := range cs {
		cs[i].Kinds = []string{ObjectUnit}
	}
	return cs
}
