package opbus

import (
	"context"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opbus/opbus/internal/registration"
	"github.com/opbus/opbus/internal/writeq"
)

// defaultIgnore lists the per-write noise that every Bus ignores: values the
// API server changes on every write, which no handler should react to.
var defaultIgnore = []string{
	"metadata.resourceVersion",
	"metadata.managedFields",
	"metadata.generation",
}

// Options configures a Bus. Nil options, and every zero field, mean the
// defaults.
type Options struct {
	// Store keeps per-object records; nil means a new MemoryStore.
	Store Store
	// Sink publishes statuses; nil means none.
	Sink StatusSink
	// Observer receives measurements; nil means none.
	Observer Observer
	// Logger receives structured logs; nil discards them.
	Logger *slog.Logger
	// Workers bounds how many objects have handlers running at once; 0
	// means 4.
	Workers int
	// Writers bounds how many objects have their record and status being
	// written at once under Run, apart from Workers: a pass gives back its
	// handler worker before it writes (rule 22a), and when writes are
	// slow the key's next states run while it writes (rule 22c). 0 means
	// 4 × Workers (at most 65,536, as Workers).
	Writers int
	// Ignore adds path patterns to ignore to those every bus ignores:
	// metadata.resourceVersion, metadata.managedFields and
	// metadata.generation, the per-write noise of an API server. A path
	// given twice counts once.
	Ignore []string
	// ListKeys identifies list elements by a field; see [CompareOptions].
	ListKeys map[string]string
	// Backoff spaces out retries of failed handlers.
	Backoff Backoff
	// MaxBacklog bounds the states queued for one object; past it they are
	// coalesced to the latest, visibly. 0 means 16.
	MaxBacklog int
	// ShutdownTimeout bounds how long Run waits for running handlers after
	// its context ends before it cancels theirs; 0 means 30s.
	ShutdownTimeout time.Duration
	// NoRecover lets handler panics crash the program, for tests.
	NoRecover bool
	// Incarnation, if set, returns the ID of the incarnation an observed
	// document belongs to (Kubernetes: metadata.uid). An observation whose
	// ID differs from the current one's ends the current incarnation as a
	// deletion and starts a new one. Nil means incarnations end only at
	// observed deletions.
	Incarnation func(obj map[string]any) string
	// Related, if set, returns the keys of the objects that an observed
	// object of any kind relates to, as [Bus.Relate] does for one kind;
	// an adapter that learns which kinds relate only once it runs (the
	// Kubernetes adapter's owned resources) declares relations this way.
	// Handlers may then read related objects of any kind.
	Related RelateFunc
	// Runs, if set, says which handlers may run on this bus, by ID: a
	// handler for which it returns false is passed over as when its
	// On.When returns false, and its record is kept as it was. Nil means
	// every handler. The Juju adapter sets it for actions, which run only
	// their own handlers.
	Runs func(handler string) bool
	// Clock, if set, is where the bus reads the time and arms the timers
	// of retries and schedules (see [Clock]); nil means the system clock.
	Clock Clock
	// Due, if set, decides instead of the clock whether a handler's
	// schedule ([On.Every], [Event.Again]) is due in a pass, and the bus
	// arms no timers: for programs that run one pass per process, such as
	// a Juju hook (the Juju adapter sets it). Nil means the clock.
	Due DueFunc
}

// check reports the first option that cannot be used, naming its field.
func (o *Options) check() error {
	switch {
	case o.Workers < 0:
		return fmt.Errorf("opbus: Options.Workers is %d: expected a positive count, or 0 for the default", o.Workers)
	case o.Workers > maxWorkers:
		return fmt.Errorf("opbus: Options.Workers is %d: expected at most %d", o.Workers, maxWorkers)
	case o.Writers > maxWorkers:
		return fmt.Errorf("opbus: Options.Writers is %d: expected at most %d", o.Writers, maxWorkers)
	case o.Writers < 0:
		return fmt.Errorf("opbus: Options.Writers is %d: expected a positive count, or 0 for 4 × Workers", o.Writers)
	case o.MaxBacklog < 0:
		return fmt.Errorf("opbus: Options.MaxBacklog is %d: expected a positive bound, or 0 for the default", o.MaxBacklog)
	case o.ShutdownTimeout < 0:
		return fmt.Errorf("opbus: Options.ShutdownTimeout is %v: expected a positive duration, or 0 for the default", o.ShutdownTimeout)
	}
	return o.Backoff.check()
}

// maxWorkers bounds Options.Workers and Options.Writers: Run starts a
// goroutine for each.
const maxWorkers = 1 << 16

// Bus dispatches observed object states to handlers and keeps their status
// slots. Register handlers and collectors, then start Run (or call Dispatch
// for one-shot use, as a Juju hook does) and feed it with Observe. A Bus is
// safe for concurrent use.
type Bus struct {
	cfg settings // from Options; fixed by New

	mu       sync.Mutex    // guards what follows, except where noted
	reg      registry      // handlers, collectors, slots and comparers; fixed once frozen
	rel      *relations    // related objects (related.go); nil until Relate
	q        queues        // the keys and their queued states (queue.go)
	lanes    lanes         // Run's goroutines, their slots and writes (writestage.go)
	frozen   bool          // registration is over: the bus has started
	running  bool          // Run has started
	stopping bool          // Run is stopping or halted: no new pass
	closed   bool          // Run has returned, or halted
	resumed  resumeState   // the store's pending states are listed (wakeup.go)
	stopped  chan struct{} // closed once Run begins to stop or halts (wakeup.go)

	stats   counters       // atomic
	stripes writeq.Stripes // order a key's store writes with shutdown's (see stripe)
	halted  atomic.Bool    // a halt began: nothing more is written (halt.go)
	subs    sync.Map       // kind → *subscribed, once the bus has started (subscribed.go)
	own     ownership      // the keys released and acquired (own.go)
}

// settings are a Bus's Options with their defaults filled in.
type settings struct {
	store       Store
	sink        StatusSink
	observer    Observer
	log         *slog.Logger
	workers     int
	writers     int // Options.Writers (writestage.go)
	backoff     Backoff
	maxBacklog  int
	shutdown    time.Duration
	recover     bool
	listKeys    map[string]string
	incarnation func(map[string]any) string
	runs        func(string) bool
	due         DueFunc // Options.Due (timer.go)
	clock       Clock   // Options.Clock (clock.go)
}

// registry is what is registered on a Bus before it starts: written under
// Bus.mu until Bus.frozen, read without a lock after.
type registry struct {
	handlers   []*handler
	collectors []*collector
	owners     registration.Names // slot ID → what owns it (internal/registration)
	index      map[string]int     // handler ID → index
	ids        []string           // handler IDs by index
	ignore     []string           // the ignored path patterns
	cmp        *Comparer
	kindCmp    map[string]*Comparer // by kind, with IgnoreKind's paths (ignorekind.go)
	kindIgnore map[string][]string  // IgnoreKind's paths, by kind
	periodic   bool                 // a handler has On.Every (timer.go)
}

// stripe returns the lock that orders the store writes of key with
// shutdown's saving of pending states; keys share 64 locks.
func (b *Bus) stripe(key Key) *sync.Mutex { return b.stripes.Of(keyHash(key)) }

// keyHash returns the hash of key that picks its stripe.
func keyHash(key Key) uint32 {
	h := fnv.New32a()
	h.Write([]byte(key.Kind))
	h.Write([]byte{0})
	h.Write([]byte(key.Namespace))
	h.Write([]byte{0})
	h.Write([]byte(key.Name))
	return h.Sum32()
}

type handler struct {
	id     string
	idx    int
	fn     HandlerFunc
	types  uint8 // bit per EventType
	kinds  []string
	fields []Path
	plain  []Path // with related fields: the fields of the object itself (related.go)
	rel    []int  // its related fields, by index in Bus.rel.fields
	when   func(*Event) bool
	rev    string
	every  time.Duration // On.Every (timer.go)
	// keepOld stores its fields' handled value with the record (On.KeepOld).
	keepOld bool
	writes  []Path               // On.Writes (writes.go)
	wcmp    *Comparer            // the bus's comparer with writes ignored; nil without writes
	wkind   map[string]*Comparer // the same for each kind given to IgnoreKind
}

func (h *handler) wants(t EventType) bool { return h.types&(1<<t) != 0 }

func (h *handler) forKind(kind string) bool {
	return len(h.kinds) == 0 || slices.Contains(h.kinds, kind)
}

// runsOn reports whether a handler runs on objects of kind, or the bus
// has no handler (only collectors). The bus writes nothing for an object
// of a kind it does not run on (rule 34a): it is observed only for the
// objects it relates to.
func (b *Bus) runsOn(kind string) bool {
	return len(b.reg.handlers) == 0 || slices.ContainsFunc(b.reg.handlers, func(h *handler) bool { return h.forKind(kind) })
}

type collector struct {
	id     string
	fn     CollectFunc
	fields []Path // what it reads, for adapters that read only what is subscribed
}

// New returns a Bus. A bad option (a negative count or duration, a
// backoff that cannot work, a bad ignored path or list key) is an error
// naming it.
func New(opts *Options) (*Bus, error) {
	if opts == nil {
		opts = &Options{}
	}
	if err := opts.check(); err != nil {
		return nil, err
	}
	b := &Bus{
		cfg: settings{
			store:       opts.Store,
			sink:        opts.Sink,
			observer:    opts.Observer,
			log:         opts.Logger,
			workers:     opts.Workers,
			writers:     opts.Writers,
			backoff:     opts.Backoff.withDefaults(),
			maxBacklog:  opts.MaxBacklog,
			shutdown:    opts.ShutdownTimeout,
			recover:     !opts.NoRecover,
			listKeys:    opts.ListKeys,
			incarnation: opts.Incarnation,
			runs:        opts.Runs,
			due:         opts.Due,
			clock:       opts.Clock,
		},
		reg: registry{owners: registration.Names{}, index: map[string]int{}},
		q:   queues{keys: map[Key]*keyState{}, ended: map[Key]endedKey{}},
	}
	b.lanes.flying = map[*keyState]observation{}
	if b.cfg.store == nil {
		b.cfg.store = NewMemoryStore()
	}
	if b.cfg.clock == nil {
		b.cfg.clock = systemClock{}
	}
	if b.cfg.log == nil {
		b.cfg.log = slog.New(slog.DiscardHandler)
	}
	if b.cfg.workers <= 0 {
		b.cfg.workers = 4
	}
	if b.cfg.writers <= 0 {
		b.cfg.writers = min(4*b.cfg.workers, maxWorkers)
	}
	b.lanes.workTok = make(chan struct{}, 1)
	b.stopped = make(chan struct{})
	b.lanes.writeSem = make(chan struct{}, b.cfg.writers)
	if b.cfg.maxBacklog <= 0 {
		b.cfg.maxBacklog = 16
	}
	if b.cfg.shutdown <= 0 {
		b.cfg.shutdown = 30 * time.Second
	}
	b.newQueue()
	b.reg.ignore = addNew(slices.Clone(defaultIgnore), opts.Ignore...)
	for _, w := range []any{b.cfg.store, b.cfg.sink} {
		if pw, ok := w.(PathWriter); ok {
			b.reg.ignore = addNew(b.reg.ignore, pw.WrittenPaths()...)
		}
	}
	cmp, err := NewComparer(&CompareOptions{Ignore: b.reg.ignore, ListKeys: b.cfg.listKeys})
	if err != nil {
		return nil, err
	}
	b.reg.cmp = cmp
	if opts.Related != nil {
		if err := b.relateAny(opts.Related); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// Ignore adds path patterns that no diff or digest sees, such as the paths
// an adapter writes. It must be called before the bus starts.
func (b *Bus) Ignore(paths ...string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.frozen {
		return fmt.Errorf("opbus: Ignore(%v): the bus has started; declare ignored paths before Run, Observe or Dispatch", paths)
	}
	return b.setIgnore(addNew(slices.Clone(b.reg.ignore), paths...))
}

// Handle registers a handler under id, which also names its status slot.
// A bad path, a duplicate ID, an unknown event type, or a filter that can
// never match is an error.
func (b *Bus) Handle(id string, fn HandlerFunc, on On) error {
	if fn == nil {
		return fmt.Errorf("opbus: handler %q: nil function", id)
	}
	h := &handler{id: id, fn: fn, when: on.When, rev: on.Revision, every: on.Every, keepOld: on.KeepOld}
	var err error
	if h.types, err = registration.Types(id, on.Types, Create, Resume, "Create, Update, Delete or Resume", Create, Update); err != nil {
		return err
	}
	if err := checkEvery(id, on.Every, h.types); err != nil {
		return err
	}
	plain := registration.Plain{Kinds: on.Kinds, Fields: on.Fields, KeepOld: on.KeepOld, DeleteOnly: h.types == 1<<Delete}
	if err := plain.Check(id); err != nil {
		return err
	}
	h.kinds = slices.Clone(on.Kinds)
	for _, f := range on.Fields {
		p, err := ParsePath(f)
		if err != nil {
			return within(err, "opbus: handler %q", id)
		}
		if j, err := b.relatedField(id, p); err != nil || j >= 0 {
			if err != nil {
				return err
			}
			h.fields, h.rel = append(h.fields, p), append(h.rel, j)
			continue
		}
		h.plain = append(h.plain, p)
		b.mu.Lock()
		cmp := b.reg.cmp
		everyKind := len(h.kinds) > 0 && !slices.ContainsFunc(h.kinds, func(k string) bool { return !b.cmpFor(k).ignoresAll(p) })
		b.mu.Unlock()
		if cmp.ignoresAll(p) {
			return fmt.Errorf("opbus: handler %q: field %s is ignored by the bus (per-write noise or the library's own writes), so it would never fire", id, f)
		}
		if everyKind {
			return fmt.Errorf("opbus: handler %q: field %s is ignored on each of its kinds %v (IgnoreKind), so it would never fire", id, f, h.kinds)
		}
		h.fields = append(h.fields, p)
	}
	if err := b.setWrites(h, on.Writes); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.claim(id, "handler"); err != nil {
		return err
	}
	h.idx = len(b.reg.handlers)
	b.reg.handlers = append(b.reg.handlers, h)
	b.reg.periodic = b.reg.periodic || h.every > 0
	b.reg.index[id] = h.idx
	b.reg.ids = append(b.reg.ids, id)
	return nil
}

// Collect registers a collector under id, which names its status slot: fn
// is evaluated at every commit of every object, like ops' collect-status
// (on a bus with handlers, of every object of a kind one runs on: rule 34a).
// fields, in the syntax of [On.Fields], are what fn reads: an adapter that
// reads only what is subscribed (the Juju adapter: relation data, config)
// reads them for it, as it does a handler's fields. They do not decide when
// fn runs, which is at every commit. A bad path is an error.
func (b *Bus) Collect(id string, fn CollectFunc, fields ...string) error {
	if fn == nil {
		return fmt.Errorf("opbus: collector %q: nil function", id)
	}
	c := &collector{id: id, fn: fn}
	for _, f := range fields {
		p, err := ParsePath(f)
		if err != nil {
			return within(err, "opbus: collector %q", id)
		}
		c.fields = append(c.fields, p)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.claim(id, "collector"); err != nil {
		return err
	}
	b.reg.collectors = append(b.reg.collectors, c)
	return nil
}

// Collectors describes the registered collectors that read fields (see
// [Bus.Collect]), in registration order, for adapters that read only what
// is subscribed. Types and Kinds are empty: a collector runs at every
// commit of every object.
func (b *Bus) Collectors() []Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []Subscription
	for _, c := range b.reg.collectors {
		if len(c.fields) > 0 {
			out = append(out, Subscription{ID: c.id, Fields: slices.Clone(c.fields)})
		}
	}
	return out
}

// AddSlot registers a status slot that handlers set with [Event.SetSlot], such
// as a state machine's. Slots of no registered owner are dropped from
// records at their next commit.
func (b *Bus) AddSlot(id string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.claim(id, "slot")
}

// claim reserves a slot ID for a what (internal/registration); b.mu is held.
func (b *Bus) claim(id, what string) error { return b.reg.owners.Claim(id, what, busSlot, b.frozen) }

// freeze ends registration; b.mu is held.
func (b *Bus) freeze() error {
	if b.closed {
		return ErrClosed
	}
	b.frozen = true
	return nil
}

// Observe queues obj as the latest observed state of key. It returns at
// once; the bus keeps a reference to obj, not a copy, so obj must not be
// modified afterwards (client-go's informer objects never are). Values of
// Go types that decoders do not produce, such as a map[string]string, are
// converted (see Objects and keys in the package documentation) in a copy
// of the maps and lists that hold them; a value that cannot be is an error
// naming its path and type, and nothing is queued.
func (b *Bus) Observe(ctx context.Context, key Key, obj map[string]any) error {
	return b.enqueue(ctx, key, observation{new: obj})
}

// ObserveUpdate is Observe for a source that knows the previous state, such
// as an informer's update notification: old is the state this key was last
// observed in. The bus keeps no state of its own to diff against.
func (b *Bus) ObserveUpdate(ctx context.Context, key Key, old, new map[string]any) error {
	return b.enqueue(ctx, key, observation{old: old, new: new, hasOld: true})
}

// ObserveDelete queues the deletion of key; last is its last known state
// (nil if unknown). Delete handlers run; once they all succeed the key's
// record is deleted.
func (b *Bus) ObserveDelete(ctx context.Context, key Key, last map[string]any) error {
	return b.enqueue(ctx, key, observation{new: last, deleted: true})
}

// Status returns the overall status of key and a copy of its slots, from
// memory or, for an object this bus has not dispatched, from the store.
func (b *Bus) Status(ctx context.Context, key Key) (Status, Slots, error) {
	b.mu.Lock()
	ks, ok := b.q.keys[key]
	if ok && ks.shown {
		s := ks.published.clone()
		if s == nil {
			s = Slots{}
		}
		b.mu.Unlock()
		return s.Summary(), s, nil
	}
	index := b.reg.index
	b.mu.Unlock()
	rec, err := b.readRecord(ctx, key, index)
	switch {
	case err != nil:
		return Status{}, nil, err
	case rec == nil:
		return Status{}, Slots{}, nil
	}
	return rec.Slots.Summary(), rec.Slots.clone(), nil
}

// Value returns a named value persisted with key's record (see
// [Event.SetValue]), and whether it is set, from memory or, for an object
// this bus has not dispatched, from the store.
func (b *Bus) Value(ctx context.Context, key Key, name string) (string, bool, error) {
	b.mu.Lock()
	ks, ok := b.q.keys[key]
	if ok && ks.shown {
		v, set := ks.values[name]
		b.mu.Unlock()
		return v, set, nil
	}
	index := b.reg.index
	b.mu.Unlock()
	rec, err := b.readRecord(ctx, key, index)
	if err != nil || rec == nil {
		return "", false, err
	}
	v, set := rec.Values[name]
	return v, set, nil
}

// Subscription describes a registered handler, for adapters that read only
// what handlers subscribe to.
type Subscription struct {
	ID     string
	Types  []EventType
	Kinds  []string // empty: any kind
	Fields []Path   // empty: the whole object
	Writes []Path   // paths of its own object it writes (On.Writes)
}

// Subscriptions returns the registered handlers, in registration order.
func (b *Bus) Subscriptions() []Subscription {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]Subscription, 0, len(b.reg.handlers))
	for _, h := range b.reg.handlers {
		s := Subscription{ID: h.id, Kinds: slices.Clone(h.kinds), Fields: slices.Clone(h.fields), Writes: slices.Clone(h.writes)}
		for t := Create; t <= Resume; t++ {
			if h.wants(t) {
				s.Types = append(s.Types, t)
			}
		}
		out = append(out, s)
	}
	return out
}

// addNew appends to list the paths it does not hold yet.
func addNew(list []string, paths ...string) []string {
	for _, p := range paths {
		if !slices.Contains(list, p) {
			list = append(list, p)
		}
	}
	return list
}
