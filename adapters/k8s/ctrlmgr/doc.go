// Package ctrlmgr runs an opbus [k8s.Source] inside a controller-runtime
// [manager.Manager], so that a kubebuilder project adopts opbus in its
// main.go alone, next to its reconcilers:
//
//	src, err := ctrlmgr.New(mgr, &k8s.Options{Resources: rs})
//	bus, err := opbus.New(src.BusOptions(nil))
//	// register handlers: bus.Handle(…)
//	err = ctrlmgr.Add(mgr, src, bus)
//	// then, as before: mgr.Start(ctrl.SetupSignalHandler())
//
// [New] and [Add] are two calls because the bus is built from the Source's
// options and its handlers are registered before the Source runs; the
// Example shows the whole main.
//
// # What the manager provides
//
//   - The cache: the Source's informers are the manager's cache's
//     (cache.GetInformer for an unstructured object of each resource's
//     kind), which the manager starts and stops and its controllers share.
//     The cache's options say what is watched: its namespaces
//     (DefaultNamespaces, ByObject's Namespaces) and label and field
//     selectors (ByObject's Label and Field) apply to the Source too, and a
//     [k8s.Resource] sets no Namespaces or selectors. A cache of all
//     namespaces is the cheaper: the Source reads objects from its
//     informers' indexers, while through a cache of some namespaces each
//     read copies the object, and [k8s.Resource].Referenced is refused
//     (Run returns an error): the referring kind's informers have no
//     indexer to find referrers by. Set cache.Options.DefaultTransform to
//     cache.TransformStripManagedFields() to keep managedFields out of the
//     cache, as the standalone Source does.
//   - The clients: requests go through mgr.GetConfig() and
//     mgr.GetHTTPClient(); under a manager made by [NewManager], through a
//     client of the Source's own from mgr.GetConfig(), whose connections
//     write nothing once the Source's Lease is lost.
//   - Leader election: the runnable [Add] adds needs leader election, so
//     the Source runs on the replica the manager's own election
//     (manager.Options.LeaderElection, kubebuilder's --leader-elect)
//     chose, and [k8s.Options].LeaderElection must be nil. When mgr.Start's
//     context ends, the manager cancels the Source's, which drains its bus
//     within the manager's GracefulShutdownTimeout, and releases its Lease
//     if LeaderElectionReleaseOnCancel is set (set it: another replica
//     then takes over at once). Make the manager with [NewManager] in
//     place of ctrl.NewManager and the Source is fenced by the manager's
//     Lease: past the renew deadline of its last successful renew, on its
//     own clock, it halts its bus ([opbus.ErrHalt]), runs no handler,
//     writes nothing and stops with [k8s.ErrLeadershipLost], which stops
//     the manager — whatever the manager's elector, which after a pause of
//     the process retries for another renew deadline, still believes.
//     With a manager made otherwise, the Source learns of a lost Lease
//     only when the manager cancels its context and returns "leader
//     election lost": a write may land in between.
//   - Metrics: unless [k8s.Options].Metrics is set, the Source's metrics
//     ([k8s.Metrics]: opbus_handler_runs_total, opbus_handler_duration_seconds,
//     …) are registered on controller-runtime's metrics.Registry and appear
//     on the manager's /metrics (--metrics-bind-address, default :8080),
//     next to controller-runtime's own. Every Source that [New] makes in
//     one process shares them (a second manager, a restart, go test
//     -count=2): opbus_leader is 1 while any of them leads, and
//     opbus_queue_depth sums their queues.
//   - Explain: mgr.AddMetricsServerExtraHandler("/explain",
//     src.ExplainHandler()) serves an object's [opbus.Bus.Explain] as JSON
//     on the manager's metrics server, as [k8s.Flags].ServeExplain does
//     standalone; off unless added.
//   - Probes: [Add] registers a check named [CheckName] with the manager's
//     /readyz (--health-probe-bind-address, default :8081), which passes on
//     a standby and, on the leader, once the Source's handlers have been
//     given every object of their informers; and one with /healthz, which
//     fails once the Source has stopped with an error.
//   - Logs: unless [k8s.Options].Logger is set, the Source logs through
//     mgr.GetLogger(), named "opbus".
//
// # Standalone
//
// A program that does not use controller-runtime uses package k8s alone,
// with the same flags, metrics and probes ([k8s.Flags], [k8s.Source.Serve]),
// and does not build controller-runtime: this package is a module of its
// own (github.com/opbus/opbus/adapters/k8s/ctrlmgr), which only its users
// require. See "Module graph" in the documentation of package k8s.
package ctrlmgr
