package main

// Example_main checks the quickstart's whole output, which the README shows.
func Example_main() {
	main()
	// Output:
	// == 1. a container dies: a status-only change
	// the Pod is created, container running
	//    fired: nothing
	//    overall: (no status)
	// the library writes its bookkeeping annotation
	//    fired: nothing
	//    overall: (no status)
	// the kubelet reports the container terminated
	//    fired: crash-watch saw change [name=app].ready: true → false
	//           crash-watch saw remove [name=app].state.running (was {"startedAt":"2026-11-30T10:00:00Z"})
	//           crash-watch saw add [name=app].state.terminated = {"exitCode":137,"reason":"OOMKilled"}
	//           any-update saw 3 changes
	//    overall: blocked: container app terminated: exit 137 (OOMKilled)
	//
	// == 2. scoped status slots, persisted across processes
	// process 1: bad config, no relation
	//    slots: a-config=blocked: config item 'kind' must be ingress or egress, b-relation=blocked: waiting for istio-pilot relation
	//    overall: blocked: config item 'kind' must be ingress or egress; waiting for istio-pilot relation
	// process 2: config fixed (A recovers)
	//    slots: a-config=active, b-relation=blocked: waiting for istio-pilot relation
	//    overall: blocked: waiting for istio-pilot relation
	// process 3: the relation arrives
	//    slots: a-config=active, b-relation=active
	//    overall: active
	//
	// == 3. a related object: a WebApp waits for its Deployment
	// the WebApp is created
	//    fired: deployment-ready sees 0 Deployment(s)
	//    WebApp: waiting: no Deployment yet
	// its Deployment is created
	//    fired: deployment-ready sees 1 Deployment(s)
	//    WebApp: waiting: web: 0/3 ready
	// the Deployment's image changes
	//    fired: nothing
	//    WebApp: waiting: web: 0/3 ready
	// the Deployment becomes ready
	//    fired: deployment-ready sees 1 Deployment(s)
	//    WebApp: active
	//
	// == 4. a timer, and "not done yet, look again later"
	// the Shop is created
	//    database: check 1: not ready, look again in 100ms
	//    overall: waiting: database starting
	// nothing changes; the bus looks again when asked
	//    database: check 2: not ready, look again in 100ms
	//           check 3: ready
	//    heartbeat: ran when due, twice or more
	//    overall: active
	//    failures counted: 0
	//
	// == 5. why did a handler run, or not?
	// WebApp shop/front (from the bus, at 2026-11-30T10:00:00Z)
	// status: error "image registry unreachable"
	// deploy: failed
	//   it failed (attempt 1); next retry at 2026-11-30T10:00:10Z (in 10s)
	//   error: image registry unreachable
	//   slot: error "image registry unreachable"
	// scale: handled
	//   the current value at its fields is the one it last handled
	//   slot: active "3 replicas"
	// backup: skipped-by-when
	//   it has handled no value of this incarnation, and its On.When returned false for the current one: it runs once When holds
}
