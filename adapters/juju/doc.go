// Package juju connects opbus to Juju: a charm is one Go program that Juju
// runs once for every hook and action, as the charm's dispatch file or
// through a dispatch script that execs it. Each run builds one document of
// what the unit sees, dispatches it to the charm's handlers, stores their
// digests and status slots in the unit's state, and sets the unit's status.
//
// # Running a charm
//
// A charm's main calls [Main] (or [Run]) with a function that registers its
// handlers on a new [opbus.Bus]:
//
//	func main() { juju.Main(setup, nil) }
//
//	func setup(b *opbus.Bus) error {
//		return errors.Join(
//			b.Handle("leadership", leadership, opbus.On{Fields: []string{"leader"}}),
//			b.Handle("config", config, opbus.On{Fields: []string{"config.kind"}}),
//		)
//	}
//
// Every hook is a new process, so every run makes a new bus; what must
// survive from one hook to the next (which values each handler last
// handled, its status slot, values set with [opbus.Event.SetValue]) lives in
// the unit's state in the controller. examples/charm is a complete charm,
// whose binary is its dispatch, and how to build and pack it.
//
// # The document
//
// The document is a JSON-like object; handlers subscribe to its fields
// with paths, as Kubernetes handlers subscribe to status.containerStatuses:
//
//	hook.name               the hook's name ("install", "db-relation-changed") or the action's
//	hook.kind               its Kind ("relation-changed", "action"; "" for a hook this package does not know)
//	hook.event              a random string, new on every run: see OnHook
//	hook.endpoint           the endpoint, storage or container of a relation, storage or workload hook
//	hook.relation-id        the relation of a relation hook (a number)
//	hook.remote-unit, hook.remote-app, hook.departing-unit
//	hook.workload, hook.notice-id, hook.notice-type, hook.notice-key, hook.check
//	hook.storage-id, hook.storage-location
//	hook.secret-id, hook.secret-label, hook.secret-revision
//	hook.meter-status, hook.meter-info   of meter-status-changed
//	unit, app               the unit ("web/0") and its application ("web")
//	model.name, model.uuid  the model
//	leader                  whether the unit leads its application (is-leader)
//	config                  the application's configuration (config-get)
//	relations.<endpoint>    a list of the endpoint's relations, by id, each
//	                        {"id": 3, "app": "pg", "units": {"pg/0": {…}}, "app-data": {…}}:
//	                        the remote application, each remote unit's data by
//	                        unit name, and the remote application's data
//	action.name, action.uuid, action.params   during an action
//	containers.<name>.can_connect   whether the workload container's Pebble answered
//	containers.<name>.boot_id       Pebble's boot ID, new each time the container starts
//
// Hook fields a hook does not carry are absent. [Document] is the typed
// form, for handlers that decode the event with [DocumentOf]. Numbers in
// config and action.params are int64 when they are integers, exact above
// 2^53, and float64 otherwise.
//
// During <endpoint>-relation-broken the broken relation is absent from
// relations.<endpoint>, whether or not relation-ids still lists it (older
// Juju lists it, newer Juju does not), as ops treats it. A dead relation
// that relation-ids still lists but the other tools answer "relation not
// found" for (during teardown, or after remove-relation --force) is in the
// list with no units and no data, as ops reads it, rather than failing
// the hook.
//
// # What is read
//
// The adapter reads only what some handler subscribes to: leader (also
// read when there are application handlers), config, action.params and each
// relation endpoint named in relations.<endpoint> cost hook tool calls and
// are left out of the document when no handler subscribes to them. A
// handler that subscribes to relations, relations[*] or the whole document
// reads every endpoint the charm declares: [Options.Endpoints], or the
// requires, provides and peers of metadata.yaml (or charmcraft.yaml) in the
// charm directory ([ReadEndpoints]).
//
// Each container in containers costs a system-info request to its Pebble
// (at most [ProbeTimeout]) and is probed only when some handler subscribes
// to it, to containers or to the whole document; the charm's containers
// are [Options.Containers] or the containers section of its metadata
// ([ReadContainers]).
//
// A collector subscribes by naming the fields it reads when it is
// registered ([opbus.Bus.Collect]'s fields): they are read at every hook
// as a handler's are, and checked alike; a collector registered without
// fields sees only what handlers subscribe to.
//
// So a handler must subscribe to every field it reads, which is right in
// any case: it runs again only when a field it subscribes to changes. Run
// checks subscriptions before anything runs, and fails the hook with an
// error that names the handler, the path and the names it could have
// meant: a path outside the document (cofig.kind), a field of hook, model,
// action or a relation that does not exist (hook.evnt, relations.db[*].ap-data),
// a path below a string or a bool (leader.x), an endpoint the charm does
// not declare (relations.dbb: "did you mean relations.db?"), a config
// option or an action parameter it does not declare (config.prot,
// action.params.targt), and a Kind other than [ObjectUnit] and
// [ObjectApplication].
//
// The charm's declarations are read from the charm directory: the
// endpoints from metadata.yaml (or charmcraft.yaml), unless
// [Options.Endpoints] lists them; the config options from config.yaml (or
// the config.options of charmcraft.yaml; a charm with neither declares
// none); the parameters of its actions, all actions together, from
// actions.yaml (or the actions of charmcraft.yaml). The charm directory
// is JUJU_CHARM_DIR, which Juju sets for every hook; without it, the
// first of the working directory (Juju runs hooks in the charm
// directory), the program's directory and its parent (a binary in bin/)
// that holds metadata.yaml or charmcraft.yaml. When none does, endpoints,
// config options and action parameters are not checked.
//
// # Hooks and actions
//
// A handler runs when the digest of its fields differs from the one
// committed at its last success: handlers of config and relations are
// level-triggered and do not run on every hook. To run on hooks, subscribe
// to hook.event, which is new on every run: [OnHook] and [OnAction] return
// such filters, restricted to named hooks or actions with When. A handler
// of the whole document runs on every hook for the same reason. opbus's
// Resume event type means "every hook" here, since every hook is a new bus;
// use OnHook instead.
//
// An action runs only its own handlers: those that subscribe to action
// (or a field under it), as [OnAction] makes them. The others neither run
// nor change their records, so a handler that fails in every hook (the
// unit is in error) does not fail every action, as Juju runs actions even
// then. A failed action fails its run; Juju does not run it again.
//
// collect-metrics and meter-status-changed run in Juju's restricted
// context ([Kind.IsRestricted]), which refuses every hook tool but
// juju-log (and add-metric in collect-metrics): config-get, state-get,
// state-set, status-get, status-set, is-leader and the relation tools
// among them. There, only the handlers that subscribe to hook.event
// ([OnHook]) run, and in meter-status-changed those of hook.meter-status
// or hook.meter-info, against no stored records; the document has no
// config, leader or relations (meter-status-changed carries
// hook.meter-status and hook.meter-info); nothing is stored and no status
// is set. Handlers of
// collect-metrics report with [Tools.AddMetric].
//
// upgrade-charm makes every handler run again once, whether or not its
// fields changed (Juju runs upgrade-charm, then config-changed, so that
// the new code re-evaluates what the old code decided), and drops the
// status slots of handlers the new code no longer registers, with all the
// records keep of them, so that their status does not stay on the unit:
// the status is set from the slots that remain, active with no message
// when none does.
//
// # Units and applications
//
// The document is dispatched under the key {Kind: "unit", Name: <unit>}
// and, on the leader, when some handler lists Kinds:
// []string{[ObjectApplication]}, also under {Kind: "application", Name:
// <app>}: the slots of the application's handlers make the application's
// status. Since a handler without Kinds handles every key, a charm with
// application handlers must give every handler Kinds; Run reports one that
// has none. Collectors registered with [opbus.Bus.Collect] see both keys
// too and return the zero Status for the one they do not judge. Each unit
// keeps its own records, so a new leader starts the application's handlers
// afresh.
//
// # State
//
// The bus's records are kept in the unit's state as one JSON string under
// one key ([DefaultStateKey], or [Options.StateKey]): a JSON object mapping
// each key to its record. A run makes exactly one state-get, and at most
// one state-set, at its end and only when a record changed. Juju limits
// state values to 64 KiB ([MaxStateValue]): a larger value fails the hook
// with an error naming its size and the limit, so what handlers persist
// with SetValue must stay small. A stored value that cannot be read fails
// every hook without running a handler and is never overwritten, until it
// is repaired or removed with the state-delete hook tool.
//
// "Why did this handler run, or not?": juju exec --unit app/0 --
// ./dispatch explain runs the charm's binary with the argument
// [ExplainArg]; [Main] then runs [Explain], which reads the records with
// state-get and explains them with the handlers the charm registers,
// writing nothing. Without the charm's binary, opbus explain -juju-state
// (cmd/opbus) reads what state-get prints.
//
// # Status
//
// At the end of a successful run, the overall status of the unit's slots
// (the highest level, with the messages of every slot at that level in
// slot-name order) is set with status-set, once, only when it differs from
// what status-get returns; on the leader, the same for the application.
// The zero status (no handler has an opinion) sets nothing, and
// [opbus.LevelUnknown] is never sent: return opbus.Active("") to say that
// all is well. Messages are cleaned with [CleanMessage] first (NUL bytes,
// which exec refuses, dropped; invalid UTF-8 replaced; trimmed; shortened),
// so that a message read back with status-get compares equal.
//
// # Failures
//
// Juju applies a hook's state-set and relation-set only when the hook exits
// 0; otherwise it discards them, shows the unit in error and retries the
// hook. So when a handler returns an error (or panics), Run logs which
// handler failed with juju-log at ERROR, makes neither state-set nor
// status-set, and returns an error: the process must exit non-zero
// ([Main] does). The retry runs the failed handler again, since its digest
// was not committed, and every other handler whose value it had handled in
// the failed run. A slot at error level with no error (a collector's, or a
// handler's that returned opbus.ErrorStatus and a nil error) fails the hook too,
// since status-set cannot show it. A failing hook tool fails the hook the
// same way. Blocked, Waiting and Maintenance are results, not failures.
//
// Because nothing of a failed run is stored, [opbus.Event.Attempt] is
// always 1 and [opbus.Permanent] has no effect: Juju decides on retries.
//
// state-set and relation-set take their input as JSON that is also YAML,
// which is what Juju reads: characters YAML refuses raw (U+007F, the C1
// controls, U+FFFE, U+FFFF) are escaped, since Juju would fail the hook on
// them, and on every retry.
//
// # Secrets
//
// [Tools] has the secret hook tools with Juju's argument syntax:
// [Tools.SecretAdd], [Tools.SecretSet], [Tools.SecretGet] (with
// SecretGetOptions.Peek and Refresh), [Tools.SecretInfoGet],
// [Tools.SecretIDs], [Tools.SecretGrant], [Tools.SecretRevoke] and
// [Tools.SecretRemove]. The secret hooks (secret-changed, secret-rotate,
// secret-expired, secret-remove) put JUJU_SECRET_ID, JUJU_SECRET_LABEL and
// JUJU_SECRET_REVISION in hook.secret-id, hook.secret-label and
// hook.secret-revision; subscribe with OnHook("secret-changed").
//
// Secret content is never in the document, the records or the state: a
// handler reads it with SecretGet when it needs it, and stores at most the
// secret's ID. It travels as [SecretContent], which never prints or logs
// its values (its String, GoString and LogValue name the keys) and refuses
// to encode to JSON; secret-add and secret-set get it through a file only
// the charm's user can read, removed afterwards, never on the command line.
// Juju makes, changes and removes secrets only when the hook succeeds.
//
// "Not done yet" need not fail the hook: a handler that returns a nil
// error after calling [opbus.Event.Again] lets the hook succeed, shows
// its own status (Waiting, say), and runs again at the next hook whatever
// the delay it gave, which is what ops' event.defer() is used for. A
// handler with [opbus.On].Every runs at update-status, and at no other
// hook unless its fields changed. (Run sets [opbus.Options].Due.)
//
// # Logs
//
// [LogHandler] is a [slog.Handler] that writes with juju-log at the
// record's level (and to standard error without Juju). Handlers log with
// the Logger of [FromContext]. Never log config values or relation data at
// Info or above: secrets live there. Run logs each status it sets at Info,
// and every failure at Error.
//
// # Hook tools
//
// [Tools] calls Juju's hook tools (status-set, relation-set, action-set, …)
// through a [Runner]; [ExecRunner] runs them as processes without a shell.
// A handler finds the Tools of the running hook, its [Env] and its logger
// with [FromContext]. [ParseEnv] reads the hook environment Juju sets.
//
// # Workload containers
//
// On Kubernetes a sidecar charm's workload runs in containers of its own,
// each managed by Pebble, whose REST API listens on a unix socket the
// charm's container sees as /charm/containers/<name>/pebble.socket
// ($OPBUS_PEBBLE_DIR replaces /charm/containers, for tests). A handler
// gets the client of a container with [Hook.Container]:
//
//	c := juju.FromContext(ctx).Container("workload")
//	err := c.Push(ctx, "/etc/app.conf", conf, &juju.PushOptions{MakeDirs: true})
//	err = c.AddLayer(ctx, "app", layer, true)
//	err = c.Replan(ctx)
//	res, err := c.Exec(ctx, []string{"app", "--version"}, nil)
//
// [Container] pushes and pulls files, adds layers, reads the plan
// ([Container.Plan], as ops' get_plan), replans, starts, stops
// and restarts services, reads services' and checks' status, reads and
// records notices (a custom notice hook's hook.notice-id is the ID
// [Container.Notice] takes) and runs commands ([Container.Exec], over the websockets of Pebble's exec task;
// output is collected in memory and the command gets no terminal). Its
// errors name the container, the socket and Pebble's message:
//
//	juju: container "workload" (socket /charm/containers/workload/pebble.socket): pebble: layer "app" already exists
//
// and wrap [ErrCannotConnect] when Pebble cannot be reached, which is
// normal until the container's pebble-ready hook. Juju never times a hook
// out, so each request and each wait for a change lasts at most
// [Container.Timeout] ([DefaultPebbleTimeout], 30 s, unless
// [Options.PebbleTimeout] or $OPBUS_PEBBLE_TIMEOUT says otherwise): a
// Pebble that stops answering fails the hook, which Juju retries, with an
// error wrapping [ErrPebbleTimeout] that names the call:
//
//	juju: container "workload" (socket /charm/containers/workload/pebble.socket): replan: pebble did not answer within 30s
//
// A command that [Container.Exec] runs for longer needs a Timeout of its
// own ([ExecOptions]). A handler that needs the
// container subscribes to containers.<name> and returns Waiting while
// can_connect is false: it runs again, whatever the hook, once the value
// changes, and when the container restarts, which gives its Pebble a new
// boot_id and none of the layers, services and pushed files the charm
// gave the last one. Juju runs <name>-pebble-ready when it finds a new
// boot ID (and when its agent restarts); that hook runs every handler
// subscribed to the container, or to a field of it such as can_connect,
// again, as for a new object (opbus.Create), so that it makes the
// container what it should be. The workload hooks (<container>-pebble-ready,
// -pebble-custom-notice, -pebble-check-failed, -pebble-check-recovered)
// carry the container, the notice and the check in hook.workload,
// hook.notice-id, hook.notice-type, hook.notice-key and hook.check; match
// them with OnHook("pebble-ready"), which matches every container's.
// examples/webserver is a complete sidecar charm.
//
// # Testing
//
// The jujutest package holds an in-memory Juju model with fakes of the
// hook tools: jujutest.Harness runs a charm's handlers in process against
// a model and returns the model the hook leaves (state in, state out), and
// jujutest.InstallTools builds the fakes as a program, so that a charm can
// also be tested as a process, the way Juju runs it: jujutest.BuildCharm
// builds the charm, jujutest.DeployCharm makes a unit of it, and each
// CharmUnit.Hook runs one hook as a new process of its dispatch. jujutest.StartPebble
// serves a fake Pebble (an in-memory filesystem, the plan its layers make,
// services, checks, and commands run by a function of the test) on a
// container's socket, for either kind of test: set Harness.PebbleDir, or
// OPBUS_PEBBLE_DIR in the charm process's environment. A test seeds it
// with the image's files and layers and with running services, restarts
// it (a new boot ID, only the image's files and layers) and makes it stop
// answering. The model holds
// secrets (owned and observed, with revisions and grants) for the secret
// tools; the fakes read state-set and relation-set input as YAML as Juju
// does, refuse what Juju's restricted context refuses in collect-metrics
// and meter-status-changed,
// and a failed hook shows the unit in error (Model.HookError), as juju
// status does.
package juju
