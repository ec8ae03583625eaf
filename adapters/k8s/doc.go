// Package k8s runs an [opbus.Bus] on Kubernetes objects: it watches any
// resource, built-in or custom, through client-go's dynamic informers,
// feeds each observed state to the bus, and writes back what the bus keeps
// — its bookkeeping record, the handlers' statuses, a finalizer — in ways
// that never trigger a handler.
//
//	src, err := k8s.New(&k8s.Options{
//		Config:    cfg,
//		Resources: []k8s.Resource{{GVR: schema.GroupVersionResource{Version: "v1", Resource: "pods"}}},
//		Logger:    logger,
//	})
//	bus, err := opbus.New(src.BusOptions(nil))
//	err = bus.Handle("crash-watch", crashWatch, opbus.On{Kinds: []string{"Pod"}, Fields: []string{"status.containerStatuses"}})
//	err = src.Run(ctx, bus)
//
// # Watching
//
// Each [Resource] names a GroupVersionResource, the namespaces to watch
// (all by default) and optional label and field selectors. An added object
// goes to [opbus.Bus.Observe]; an update goes to [opbus.Bus.ObserveUpdate]
// with the informer's old and new objects, so the bus diffs them without
// keeping a copy of its own; a deletion, including the informer's
// DeletedFinalStateUnknown, goes to [opbus.Bus.ObserveDelete]. The
// informers' caches drop metadata.managedFields, which every diff ignores.
//
// Status is data: a change of status.containerStatuses written by the
// kubelet fires the handlers subscribed to it like any other change. The
// bus ignores only the per-write noise in [Ignore] and the paths the
// adapter writes itself; [ListKeys] makes diffs address list elements by
// name (status.containerStatuses[name=app].state).
//
// Updates that change only what the adapter writes (the annotations, its
// conditions, its finalizer) and the resource version never reach the
// bus: each write of the adapter would otherwise come back through the
// informer as a state, to be queued and dispatched for nothing. A handler
// that fails therefore runs on its backoff's schedule
// ([opbus.Options].Backoff), whatever the adapter writes meanwhile.
//
// # Keys
//
// An object's [opbus.Key] holds its namespace, its name and its kind as
// [KindOf] writes it: "Pod" for the core group, "Deployment.apps" or
// "Widget.example.com" for any other, so that kinds of the same name in
// different groups never share keys, records or handlers. Use the same
// strings in [opbus.On].Kinds.
//
// # Related resources: owned, referenced, read-only
//
// A [Resource] marked Owned relates each of its objects to its controller
// (the ownerReference with controller: true), as controller-runtime's Owns
// does, through [opbus.Options].Related, which [Source.BusOptions] sets: a
// handler of the owner's kind subscribes to
// related["Deployment.apps"][*].status.readyReplicas and runs when a
// Deployment it controls appears, changes readiness or goes. A related
// kind may be named by its kind alone where one related resource has it:
// related.Deployment[*].status.readyReplicas is the same subscription,
// and the handler reads the Deployments under related.Deployment as under
// related["Deployment.apps"]; where two related resources have the kind
// (Job.batch and Job.example.com), Run refuses it, naming both.
//
// A [Resource] with Referenced relates each of its objects to the objects
// that name it in a field: with Referenced: []Reference{{Kind:
// "Backup.example.com", Field: "spec.target"}} on ConfigMaps, a Backup's
// handler subscribed to related.ConfigMap[*].data runs when the ConfigMap
// its spec.target names changes, is created after the Backup or goes, and
// when spec.target names another one (a switch is two changes: the old
// ConfigMap stops relating, then the new one starts). The referring
// kind's informer, the one the rest of the adapter uses, indexes the
// field; when it changes, the adapter gives the bus the old and the new
// ConfigMap again so that it computes their relations anew.
//
// A resource no handler of the bus runs on (no handler lists its kind in
// [opbus.On].Kinds, and none lists no Kinds) is read-only: it is watched
// only for the objects it relates to, and the adapter never claims its
// objects nor writes a record, status, condition, Event or finalizer to
// them, so get, list and watch are all the RBAC it needs on it. Run logs
// at Info which resources are read-only. [Resource].ReadOnly asks for it
// and makes Run fail if a handler would run on the kind.
//
// The bus dispatches once every informer's first list is queued, the
// objects of owned, referenced and read-only resources first: after a
// restart, an owner's first run sees the objects it controls, so a handler
// that read them runs again only if they changed.
//
// # Handlers that write
//
// A handler writes with the [Client] that [Source.Client] returns for its
// event (a handler closure holds the Source):
//
//	must(bus.Handle("deploy", func(ctx context.Context, ev *opbus.Event) (opbus.Status, error) {
//		c := src.Client(ev)
//		if _, err := c.Apply(ctx, deployment(ev.New)); err != nil { // an appsv1 apply configuration, say
//			return opbus.Status{}, err
//		}
//		return opbus.Status{}, c.ApplyStatus(ctx, map[string]any{"readyReplicas": ready(ev.New)})
//	}, opbus.On{Kinds: []string{"WebApp.example.com"},
//		Fields: []string{"spec", `related["Deployment.apps"][*].status.readyReplicas`},
//		Writes: []string{"status.readyReplicas"}}))
//
// [Client.Apply] creates or updates a child with server-side apply, under
// a field manager of the handler's own ([FieldManager]: the operator's
// name, a slash, the handler's ID), with Force; the child's namespace
// defaults to the owner's (another namespace, or a cluster-scoped child of
// a namespaced owner, is refused: no owner reference can name the owner
// there), and it gets a controller owner reference to the
// event's object unless it names a controller already. Each handler owns
// the fields it applies: one it stops applying is removed, and another
// handler's fields stay. Two handlers applying one field with different
// values take it from each other at each apply (Force): if they also read
// the child, each runs the other again, without end. A typed object may
// leave its TypeMeta empty: its apiVersion and kind come from
// [Options].Scheme (ctrlmgr passes the manager's), client-go's scheme of
// Kubernetes' own types, or the watched resource whose kind is the Go
// type's name.
//
// [Client.ApplyStatus] applies fields of the object's own status (through
// the status subresource where there is one) under the same field
// manager. As with server-side apply, what it is given is the whole of
// what the handler wants: a field it set before and leaves out, or sets
// to nil, is given up (removed unless another manager set it too), and an
// empty status gives up all of them. Every status field a handler writes
// must be under its [opbus.On].Writes: those paths are left out of its own
// digests and Changes, so its writes never run it again, while any other
// handler subscribed to them runs as for any change — and so does the
// writer when another writer changes a field it reads. On a kind with
// conditions ([StatusConditions]) the fields are held until the handler's
// pass writes, and go in one write with the conditions that say what the
// handler made of them: a client that sees status.readyReplicas sees the
// Available condition of the same pass, at the same resource version.
// That write applies the conditions too, under the handler's field
// manager; the record annotation, metadata that the status subresource
// does not take, stays a write of its own. A pass that writes no status
// (its statuses did not change) writes the held fields alone, with its
// record, or within 100 ms of the handler's return when it writes
// nothing else. ApplyStatus then returns before the write: an error of
// the write fails the pass's status write, which the bus retries with its
// backoff (and reports as StatusRefused when refused for good).
//
// [Client.Get] and [Client.List] read objects of any watched kind from the
// informer cache, without a request: the children the handler applied
// (List with Controlled: true lists those the event's object controls),
// related objects, and others (watch a kind no handler runs on as a
// read-only [Resource]). A kind is named as in keys ("Job.batch") or by
// its kind alone where one watched resource has it ("Job").
// [Client.Delete] deletes the event's object or any other, by default only
// the object of the uid it carries (so a child created again under its
// name since it was read is left alone), with resource version
// preconditions and a propagation policy (Foreground, Background, Orphan)
// in [DeleteOptions]; deleting what is already gone is no error.
//
// Neither sends a request when the same handler applied the same object
// last, in this process, and the informer cache still holds every field of
// it with equal values: a handler that runs again on an unchanged input
// writes nothing. The cache is that of a watched [Resource]; mark the
// children's resource Owned to relate them to their owner too. A status
// write carries the resource version of a state of the event's uid, so it
// never lands on an object that took the name since (an API server takes
// a metadata.uid on the status subresource as no precondition); its error
// then wraps [ErrGone]. A delete handler gets a Client whose Apply and
// ApplyStatus return an error (the owner references let garbage
// collection remove the children); it may Get, List and Delete.
//
// Permissions: list, watch, create and patch on the children's resources
// (server-side apply is a patch, and one that creates needs create too;
// watching them lets the cache skip repeats), delete on those it deletes,
// and patch on <resource>/status, or on the resource itself for one
// without a status subresource.
//
// # Checked at startup
//
// Before it watches anything, [Source.Run] checks what the handlers
// subscribe to against what the API server serves, and returns an error
// naming the handler, the input and what was meant:
//
//   - a kind in [opbus.On].Kinds that no [Resource] holds, such as "Backup"
//     where the Source watches Backup.demo.example.com;
//   - a field path, in a handler's Fields or in [opbus.Options].Ignore
//     given to [Source.BusOptions], that no object of the handler's kinds
//     can have by the OpenAPI v3 schema the API server publishes for the
//     resource (/openapi/v3/apis/<group>/<version>, for built-in kinds and
//     for custom resources alike): a misspelt field (spec.verison: "did
//     you mean spec.version?"), a [field=value] match on a field the list's
//     elements lack, a key on a list or anything below a string or a
//     number;
//   - a related path, related.<Kind>.<name>.<field>, whose kind no watched
//     resource has, as spelt in keys or by its kind alone (related.Jobs
//     where the Source watches Job.batch: "did you mean
//     related["Job.batch"]…?"), whose kind alone several related
//     resources have (Job.batch and Job.example.com: the error names
//     both), whose kind with its group is written unquoted, split at its
//     dots (related.Job.batch[*].status.active: "did you mean
//     related["Job.batch"][*].status.active?"), whose kind's objects relate to nothing (neither Owned nor
//     Referenced, and no Related function given to [Source.BusOptions]),
//     or whose field the related kind's schema does not allow.
//
// The check follows the schema's references and its allOf, oneOf and
// anyOf, and accepts any key of a map (metadata.labels, additionalProperties),
// any element of a list, anything below x-kubernetes-preserve-unknown-fields
// or below an object whose schema names no field, and an embedded
// resource's apiVersion, kind and metadata. A path that one kind of a
// handler without Kinds can have is accepted. The schemas are read once per
// group version at each Run; when one cannot be read (the server publishes
// none, RBAC forbids /openapi/v3, a custom resource's schema is not
// published yet, just after its CRD was created), the fields of its kind
// are not checked, and Run logs which at Info, once, and starts. Every
// authenticated user may read /openapi/v3 by default (the system:discovery
// role). A handler that lists no fields reads the whole object and needs
// no schema: without fields to check, Run reads none.
//
// # Incarnations
//
// Two objects that have the same name one after the other, such as the
// Pods of a StatefulSet, are two incarnations of one key for the bus:
// [Source.BusOptions] sets [opbus.Options].Incarnation to [Incarnation],
// which returns metadata.uid. Nothing crosses from one to the next: an
// object created while the delete handlers of the previous one are still
// retried waits until they have succeeded, and then its handlers run as
// for any new object. The record holds the uid it was written for, and
// the adapter writes a record, a status or a finalizer only to the object
// of that uid (a metadata.uid precondition on its patches): what is
// written for an object that is gone is dropped, never written onto the
// object that took its name. A record copied onto another object (kubectl
// get -o yaml | kubectl create) is of another uid: the bus logs it and
// starts afresh.
//
// # The record
//
// The bus's record of an object — the digests of the values its handlers
// last handled, its status slots, its named values — is JSON in one
// annotation, [AnnotationRecord], written with a JSON merge patch of that
// annotation alone, or, on a kind whose status is [AnnotationStatus], of
// both annotations when a pass changed both (one request: core rule
// 22b). It holds digests, not copies of the object: a few
// hundred bytes. The store reads records from the informer cache, never
// from the API server, and refuses, with an error naming the object and
// the sizes, a write that would take the object's annotations past the API
// server's limit of 256 KiB ([ErrTooLarge]).
//
// Before the bus first sees an object, the adapter claims it: it writes an
// empty [AnnotationRecord] (and [Finalizer], and a first Ready condition,
// where those apply). A handler's value is digested as the bus sees it; if
// the adapter's first record write later made metadata.annotations appear
// on an object that had none, that alone would change the digest of a
// whole-object handler and run it again. Claiming first costs one write
// per new object and keeps every later write of the adapter invisible.
//
// # Statuses
//
// Where statuses go is a [StatusMode] per resource. For a custom resource
// with a status subresource ([StatusConditions], the default there), the
// adapter writes standard metav1.Conditions in status.conditions: one per
// slot, of type [ConditionType](slot) — the slot's id in CamelCase, so that
// "crash-watch" writes "CrashWatch" — or of the type the author chose in
// [Options].Conditions ("Available"), with status True when the slot is
// active, Unknown while it is unknown or in progress (maintenance) and
// False when it is waiting, blocked or failed — the other way round for an
// abnormal-true type ([Condition].AbnormalTrue: Degraded=True while the
// handler fails) —, reason the slot's own ([opbus.Status].Reason,
// set with [opbus.Status.WithReason]) or else the level in CamelCase
// ("Blocked"), and the slot's message; and a summary of type
// [ConditionReady], True when the overall level is active, with reason the
// overall reason (that of the first slot deciding the level that has one)
// or the overall level, and message the overall message
// ([Options].NoSummaryCondition leaves it out). Until the handlers' first
// pass on an object writes, the condition of each handler that runs on it
// is Unknown with reason [ReasonReconciling] (written when the object is
// claimed). Two slots of one type, or a slot named "ready", make
// [Source.Run] fail with an error naming both. Conditions that an earlier version wrote under the
// former spelling of a slot's type (the id itself, "crash-watch", with a
// level's word as reason) are removed at the object's next status write. Every condition carries the
// metadata.generation of the state the handlers saw as observedGeneration,
// rewritten after a pass that handled a new state even when no status
// changed (the adapter learns the pass's state through a collector named
// opbus.dev/generation, which never fills a slot);
// lastTransitionTime changes only when a condition's status does (the
// rules of meta.SetStatusCondition). Conditions of slots that are gone are
// removed, including those of a handler no longer registered (renamed or
// removed): the bus drops its slot at the object's next commit, and the
// adapter, which finds the slot in the record the object held before,
// removes its condition in the same status write. Other writers'
// conditions are kept as they are. The status is
// patched only when a condition changed, under the object's resource
// version; a conflict is retried after reading the object again.
//
// For Kubernetes' own kinds, whose status belongs to a controller or the
// kubelet ([StatusAnnotation], the default there), the overall status goes
// to [AnnotationStatus] as JSON, and each change of it emits a core/v1
// Event on the object: reason the level in CamelCase, type Warning for
// blocked and error, Normal otherwise. As client-go's recorder does, an
// Event that repeats one already emitted (same object, type, reason and
// message, among the last 4096) is counted on it — its count and
// lastTimestamp go up — instead of created again, and each object may
// emit a burst of 25 Events, then one every 5 minutes; the others are
// dropped. Messages are cut at 1024 bytes, on a character boundary.
//
// Custom resources written with conditions get Events too: one at each
// change of the overall level (a change of message alone emits none),
// typed and named as above, with the overall reason where there is one.
// After a restart, the level is compared with the record the object held,
// so a level that did not change emits nothing. In either mode, each
// handler failure emits a Warning Event of reason [ReasonHandlerFailed],
// "handler H failed: <error>", counted and limited like the others: a
// handler failing at each retry makes one Event whose count grows. The
// adapter hears of failures through the bus's Observer:
// [Source.BusOptions] makes it a fan-out to the Observer given, to
// [Options].Metrics and to the adapter, and the Events are emitted from a
// goroutine of the running Source, never from the bus's.
//
// The bus ignores everything the adapter writes: the two annotations
// (declared by the Store and the Sink, see [opbus.PathWriter]), and,
// declared by [Source.Run] once handlers are registered,
// status.conditions[type=T] for Ready and each slot's type, on the kinds
// it writes conditions to only ([opbus.Bus.IgnoreKind]), and
// metadata.finalizers when a finalizer is in use. So one Source and one
// bus may watch custom resources with conditions and built-in kinds
// together: a Pod's own Ready condition still runs the handlers
// subscribed to it, while the adapter's conditions on a Widget run none.
// A bus ignores at most 64 paths on a kind, its own Ignore and ListKeys
// included, so a Source that writes conditions supports about 55 slots;
// with more, Run stops at once with an error that names the slots and the
// limit.
//
// What the adapter keeps on a live object is its own. When another
// writer removes or changes the record, the adapter's conditions or its
// status annotation, or removes the finalizer, the adapter writes back
// what the bus holds — the record the store last saved or loaded, the
// statuses the sink was last asked to show — at once and without running
// a handler. A write-back carries the resource version of the object it
// read, so it never lands over a newer write of the bus's; nothing is
// written back on an object being deleted.
//
// A record or status write refused for good — past [MaxAnnotationBytes],
// invalid, forbidden, denied by an admission policy — is retried by the
// bus with its backoff, and reported once (until its message changes or a
// write goes through) with a Warning Event of reason
// [ReasonRecordRefused] or [ReasonStatusRefused] on the object. So is a
// refused claim (the empty record and the finalizer, or the first
// conditions), which the adapter retries itself, from 5 ms doubling up to
// 1000 s, and at most 10 retries a second in all after a burst of 100; the
// bus never sees an object whose claim is refused.
//
// # Deletion
//
// A [Resource] with Finalizer set, of a kind some handler handles deletes
// of, has [Finalizer] added when the adapter claims each object. When the
// object is deleted, the API server only marks it (deletionTimestamp) and
// the adapter gives the marked state to the bus as a deletion; once every
// delete handler has succeeded the record and the finalizer are removed,
// and the object goes. So a deletion made while the operator was down is
// handled when it starts again. Without a finalizer, a delete handler runs
// when the informer reports the object gone — if the operator was running
// then.
//
// # Leader election
//
// With [Options].LeaderElection, [Source.Run] campaigns for a
// coordination.k8s.io Lease and watches and dispatches only while it holds
// it. On a clean stop it drains the bus first and then releases the Lease,
// so another replica takes over within its retry period, and never while
// the old leader still works; a leader that cannot renew in time stops and
// Run returns [ErrLeadershipLost]. The records live on the objects, so the
// new leader does not run again what the old one handled.
//
// A leader fences itself by its Lease: before each handler run and each
// write it checks, on its own monotonic clock, that its last successful
// renew began less than the renew deadline ago ([LeaseLock.Deadline]).
// Once that has passed — whatever client-go's elector, which after a
// pause of the process retries for another renew deadline, still
// believes — it has lost the Lease: the bus halts ([opbus.ErrHalt]),
// running handlers see their context cancelled with a cause wrapping
// [ErrLeadershipLost], every request that writes is refused before it
// leaves the process (no record, condition, child, Event or pending
// state), [Source.Leading], opbus_leader and /readyz drop, and Run
// returns [ErrLeadershipLost]. A replica that takes the Lease from a
// holder that did not release it waits before it handles: the Lease's
// renew deadline plus two seconds (one for the old holder's handlers to
// return, one for a write under way) from when it last saw the old
// holder's record change, and client-go makes it wait the lease duration
// from then anyway; the old holder stopped writing at the renew deadline
// after its renewal began, which was before. Inside a controller-runtime
// manager, ctrlmgr.NewManager gives the Source the same fence
// ([Options].Fence).

// # Several operators
//
// Operators of different [Options].Name on the same objects keep apart:
// the default name writes [AnnotationRecord], [AnnotationStatus],
// [Finalizer], [ConditionReady] and [ConditionType]s, and another name N
// writes the same under the domain N.opbus.dev (N.opbus.dev/record,
// N.opbus.dev/Ready, N.opbus.dev/<slot>…). Renaming an operator therefore
// starts it afresh: its handlers run once more for every object, and the
// names written under the old name stay until removed by hand. Each
// operator's writes are another writer's to the other: subscribe
// handlers to fields, since one that reads the whole object runs at
// every write of the other operator.
//
// # Metrics and probes
//
// [NewMetrics] creates Prometheus metrics (github.com/prometheus/client_golang,
// which only this module requires, never the core): per handler and kind,
// runs, failures, retries and a duration histogram; states observed and
// coalesced, retries scheduled, the queue depth; the latency of the
// adapter's record and status writes; runs due to timers and how late
// they started ([opbus.TimerObserver]); opbus_leader. Set them as
// [Options].Metrics: [Source.BusOptions] makes the bus's Observer reach them.
// [Metrics] documents every name.
//
// [Source.Probes] serves /healthz (the process answers) and /readyz
// ([Source.Ready]: Run has started, has not returned, and its informers
// have synced). With leader election, a replica that does not hold the
// Lease is ready, as in controller-runtime, whose readiness does not
// depend on leadership: a Deployment's rollout waits for every replica to
// be ready, and only one leads. [Source.Leading], opbus_leader and
// /readyz?verbose tell the leader apart.
//
// A standalone operator binds controller-runtime's flags with [Flags]
// (--metrics-bind-address, default :8080; --health-probe-bind-address,
// default :8081; --leader-elect) and starts both servers with
// [Source.Serve], which shuts them down gracefully when its context ends:
//
//	var f k8s.Flags
//	f.Bind(flag.CommandLine)
//	flag.Parse()
//	m, _ := k8s.NewMetrics(nil)
//	src, _ := k8s.New(&k8s.Options{Config: cfg, Resources: rs, Metrics: m,
//		LeaderElection: f.LeaderElection(k8s.LeaderElection{Namespace: ns, Name: "my-operator"})})
//	bus, _ := opbus.New(src.BusOptions(nil))
//	// register handlers…
//	servers, err := src.Serve(ctx, f)
//	err = src.Run(ctx, bus)
//	err = servers.Wait()
//
// # Explaining an object
//
// "Why did this handler run, or not?" From outside, the command
// kubectl-opbus (the kubectl plugin "kubectl opbus explain RESOURCE
// NAME", in cmd/kubectl-opbus) reads an object's record through the
// kubeconfig and explains it ([ExplainObject]). On the operator,
// --serve-explain ([Flags].ServeExplain, off by default) serves
// [Source.ExplainHandler] at /explain on the metrics server: an object's
// [opbus.Bus.Explain] as JSON, and without a query a page of the objects
// whose handlers fail, retry or wait, each linking to its explanation.
// It writes nothing and shows no object values: expose it where metrics
// are.
//
// # Inside a controller-runtime manager
//
// The module github.com/opbus/opbus/adapters/k8s/ctrlmgr runs a Source as a
// runnable of a controller-runtime manager, on the manager's cache (through
// [Options].Informers), clients ([Options].HTTPClient), leader election,
// metrics registry and probes, with the manager's flags: a kubebuilder
// project adds opbus in its main.go alone. See its documentation.
//
// # Module graph
//
// This module does not require controller-runtime; only ctrlmgr, a module
// of its own, does. So a program that uses the core, or this adapter
// standalone, does not build it:
//
//	cd adapters/k8s && GOWORK=off go list -deps -test ./... | grep sigs.k8s.io/controller-runtime
//
// prints nothing (TestModuleGraph checks it here and for the core module).
//
// # Logs
//
// The adapter logs through [Options].Logger, and hands it to the client-go
// code it runs through the context. [RouteKlog] sends what client-go logs
// through klog's global logger to the same place.
//
// # Permissions
//
// What the operator's identity needs, feature by feature, on each resource
// it watches:
//
//   - watching: list and watch (client-go streams the initial list through
//     the watch where the server can, and falls back to list);
//   - the record: patch;
//   - conditions ([StatusConditions]): patch on the status subresource
//     (such as widgets/status), and get: after a conflict the adapter reads the
//     object again; create and patch on events in the object's namespace,
//     for the Events of level changes and handler failures (patch counts a
//     repeated Event);
//   - the status annotation ([StatusAnnotation]): patch, and create and
//     patch on events in the object's namespace (default for a
//     cluster-scoped object), for the Events of status changes and handler
//     failures;
//   - the finalizer: patch, and get, as for conditions;
//   - leader election: get, create and update on coordination.k8s.io
//     leases in the Lease's namespace;
//   - a handler's [Client]: create and patch on the children's resources
//     (a server-side apply that creates an object needs create too; list
//     and watch where they are watched), delete on those it deletes, and
//     patch on the status subresource (and get on the resource, read after
//     a conflict); Get and List read the cache: list and watch;
//   - Events, in every mode but for read-only resources: create and patch
//     on events (core group) in the objects' namespaces, for the Events of
//     handler failures (HandlerFailed), of refused writes (RecordRefused,
//     StatusRefused) and of status changes; patch counts a repeated Event;
//   - a read-only resource: list and watch, nothing more.
//
// As kubebuilder markers, for a Widget operator with conditions, a
// finalizer, owned Deployments it applies and deletes, and leader
// election (controller-gen writes the Role from them):
//
//	// +kubebuilder:rbac:groups=example.com,resources=widgets,verbs=get;list;watch;patch
//	// +kubebuilder:rbac:groups=example.com,resources=widgets/status,verbs=get;patch
//	// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch;delete
//	// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
//	// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
//
// examples/podwatch ships an rbac.yaml with exactly what it needs for
// Pods, and examples/webapp one for a custom resource with children;
// testdata/rbac-widgets.yaml is the Role for a custom resource with
// conditions, a finalizer and leader election. Their tests run the
// operator as a user with those permissions and no others.
//
// # Testing
//
// The tests run against a real kube-apiserver and etcd, started by the
// package kubetest, which an operator's own tests can use too: set
// OPBUS_KUBE_BIN to a directory holding both programs, or
// OPBUS_TEST_KUBECONFIG to the kubeconfig of an existing cluster. Without
// either they skip, unless CI=true.
package k8s
