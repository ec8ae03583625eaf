package k8s

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
)

// Options configures a [Source]. Every zero field means its default; Config
// and Resources are required.
type Options struct {
	// Config says how to reach the API server, with whose credentials.
	// The Source uses a copy; if it sets no rate limit (QPS, Burst and
	// RateLimiter all zero), the copy gets [DefaultQPS] and [DefaultBurst]:
	// no client-side rate limit.
	Config *rest.Config
	// Resources lists what to watch, at most one version of each kind.
	Resources []Resource
	// Logger receives the adapter's logs, and those of the client-go
	// informers and leader election it runs; nil discards them. client-go
	// code that logs through klog's global logger is routed with
	// [RouteKlog].
	Logger *slog.Logger
	// LeaderElection, if set, makes Run watch and dispatch only while this
	// process holds a Lease, so that several replicas can run and only one
	// handles. Nil means no election: Run always handles.
	LeaderElection *LeaderElection
	// Slots lists the IDs of status slots registered with [opbus.Bus.Collect]
	// or [opbus.Bus.AddSlot]. Run learns the slots of handlers from the bus,
	// but not these; a slot not declared has no condition written for it
	// (it still counts in the Ready condition's summary).
	Slots []string
	// Name names the operator: the field manager of its writes, the
	// component of the Events it emits, the start of its default
	// leader election identity, and the names it writes into objects,
	// so that two operators of different names on the same objects keep
	// apart. "" and "opbus" write [AnnotationRecord], [AnnotationStatus],
	// [Finalizer], [ConditionReady] and [ConditionType]s; another name N
	// writes N.opbus.dev/record, N.opbus.dev/status, N.opbus.dev/cleanup,
	// N.opbus.dev/Ready and N.opbus.dev/[ConditionType](slot) (N made a DNS label, with a
	// hash, when the name is not one). "" means "opbus".
	Name string
	// SummaryCondition names the condition that sums up an object's slots
	// (its status is True when the overall level is active), written
	// with the slots' conditions: "" means [ConditionReady]. Spelt as a
	// slot's ([ConditionType]: "available" writes Available, or
	// N.opbus.dev/Available for an operator named N). Set it when a
	// handler's own slot is to be the Ready condition, such as one named
	// "ready" that is active exactly when the object's replicas are.
	SummaryCondition string
	// Conditions sets, by slot id (a handler's ID, or one of Slots), the
	// type and polarity of the slot's condition ([Condition]): condition
	// types chosen by the author, and abnormal-true ones such as
	// Degraded. A slot not listed gets [ConditionType](id), True when
	// active. [Source.Run] refuses an id that names no slot, and two slots
	// of one type.
	Conditions map[string]Condition
	// NoSummaryCondition leaves the summary condition out: only the
	// slots' conditions are written. SummaryCondition must then be "".
	NoSummaryCondition bool
	// Metrics, if set, receives the bus's measurements (see
	// [Source.BusOptions]) and the latency of the adapter's record and
	// status writes; nil means none. See [NewMetrics].
	Metrics *Metrics
	// Informers, if set, provides the informers of the resources, which
	// the Source then neither builds nor runs: for adapters such as
	// ctrlmgr. See [Informers]. Nil means the Source's own.
	Informers Informers
	// HTTPClient, if set, carries the requests of the Source's clients,
	// built from Config and it (as rest.HTTPClientFor(Config) would build
	// one): for adapters such as ctrlmgr, which share a manager's. Nil
	// means one of the Source's own.
	HTTPClient *http.Client
	// Fence, if set, returns until when this replica may act on the
	// objects: the instant, on this process's monotonic clock, at which
	// the Lease of an election run outside the Source (a manager's; see
	// ctrlmgr.NewManager, and [LeaseLock.Deadline]) may be another
	// replica's. Run checks it before each handler run and each write, and
	// once it has passed halts the bus ([opbus.ErrHalt]), refuses every
	// write and returns an error matching [ErrLeadershipLost]. Nil means
	// no such check; [Options].LeaderElection has its own.
	Fence func() time.Time
	// Shards, if set, makes this replica a member of a shard ring: the
	// replicas of the operator split its objects between them by the hash
	// of their uid (an owned child's by its controller owner's), each
	// handling only its part, and hand parts over as replicas come and go
	// (see [Shards]). Nil means this replica handles every object. It
	// excludes LeaderElection, Fence and Informers.
	Shards *Shards
	// Scheme, if set, gives [Client.Apply] and [Client.Delete] the
	// apiVersion and kind of typed objects that leave their TypeMeta
	// empty, before client-go's scheme of Kubernetes' own types and the
	// watched resources' kinds (see [Client.Apply]); ctrlmgr sets the
	// manager's. Nil means those two alone.
	Scheme *runtime.Scheme
}

// Resource is one kind of object to watch, by group, version and resource
// (the plural name in URLs): {Version: "v1", Resource: "pods"}, {Group:
// "apps", Version: "v1", Resource: "deployments"}, or a custom resource.
type Resource struct {
	GVR schema.GroupVersionResource
	// Namespaces lists the namespaces to watch; empty means all of them.
	// It must be empty for a cluster-scoped resource.
	Namespaces []string
	// LabelSelector and FieldSelector restrict the objects watched, in
	// the syntax of kubectl's --selector and --field-selector. An object
	// that stops matching leaves the watch: to the bus it is deleted.
	LabelSelector string
	FieldSelector string
	// Finalizer adds [Finalizer] to each object before its first handler
	// runs, and removes it once every delete handler has succeeded, so that
	// a deletion made while the operator was down is still handled. It
	// takes effect only if a handler of the bus subscribes to Delete for
	// this kind; a finalizer nobody removes would block deletions forever.
	// The bus then ignores metadata.finalizers, since a change of one
	// element of a list of strings cannot be told apart from another.
	Finalizer bool
	// Status says where statuses are written. The zero value, StatusAuto,
	// picks conditions for custom resources with a status subresource and
	// the annotation otherwise.
	Status StatusMode
	// Owned relates each object of the resource to its controller, the
	// owner its metadata.ownerReferences name with controller: true, as
	// controller-runtime's Owns does: handlers of the owner's kind read it
	// under related.<Kind>.<name> (see [opbus.RelatedField]), with Kind as
	// [KindOf] spells it, such as
	// related["Deployment.apps"][*].status.readyReplicas. The owner is
	// found by kind and name in the object's namespace, or without one
	// when its kind is a cluster-scoped resource of the Source; its uid is
	// not compared, so an object whose controller was deleted and created
	// again under its name relates to the new one. The owner's kind must
	// be watched too for its handlers to run.
	Owned bool
	// ReadOnly asks that the adapter never write to the resource's
	// objects: no record, status, condition, Event or finalizer, so that
	// get, list and watch are all the RBAC it needs. A resource no handler
	// runs on is read-only anyway (it is watched only for the objects it
	// relates to); ReadOnly makes [Source.Run] fail if a handler would
	// run on its kind.
	ReadOnly bool
	// Referenced relates each object of the resource to the objects that
	// name it in a field (see [Reference]), such as the Backups whose
	// spec.target is a ConfigMap's name: handlers of the referring kind
	// read it under related.<Kind>.<name>, as for Owned. The referring
	// kind must be a resource of the Source; its informer, shared with the
	// rest of the adapter, indexes the field. Under [Options].Shards every
	// replica watches all of the resource's objects, for the referrers it
	// handles; handlers that run on the resource itself run, for each
	// object, on the one replica its own uid places it with.
	Referenced []Reference
}

// StatusMode says where a [Source] writes the statuses of a resource's
// objects.
type StatusMode int

const (
	// StatusAuto picks StatusConditions for a resource with a status
	// subresource whose group is not Kubernetes' own (its name has no dot,
	// or ends in .k8s.io: the status of a Pod belongs to the kubelet, that
	// of a Deployment to its controller), and StatusAnnotation otherwise.
	StatusAuto StatusMode = iota
	// StatusConditions writes one metav1.Condition per slot, and a summary
	// [ConditionReady], in status.conditions through the status
	// subresource. See [ConditionType] for the condition types.
	StatusConditions
	// StatusAnnotation writes the overall status to [StatusAnnotation] and
	// emits a Kubernetes Event at each change of it.
	StatusAnnotation
	// StatusNone writes no status.
	StatusNone
)

var statusModeWords = [...]string{"auto", "conditions", "annotation", "none"}

// String returns the mode's lower-case name.
func (m StatusMode) String() string {
	if m >= 0 && int(m) < len(statusModeWords) {
		return statusModeWords[m]
	}
	return fmt.Sprintf("StatusMode(%d)", int(m))
}

// LeaderElection configures leader election with a coordination.k8s.io
// Lease. The durations are client-go's: a leader renews its lease every
// RetryPeriod and gives up leading if it could not renew it within
// RenewDeadline; others take the lease over LeaseDuration after its last
// renewal, or at once when the leader releases it on a clean stop.
type LeaderElection struct {
	// Namespace and Name name the Lease; both are required.
	Namespace, Name string
	// Identity names this replica in the Lease; "" means the Name of
	// [Options], the host name and a random suffix.
	Identity string
	// LeaseDuration defaults to 15s, RenewDeadline to 10s, RetryPeriod to
	// 2s. LeaseDuration must exceed RenewDeadline, which must exceed
	// 1.2 × RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// withDefaults returns a copy with every zero duration set.
func (le LeaderElection) withDefaults() LeaderElection {
	if le.LeaseDuration == 0 {
		le.LeaseDuration = 15 * time.Second
	}
	if le.RenewDeadline == 0 {
		le.RenewDeadline = 10 * time.Second
	}
	if le.RetryPeriod == 0 {
		le.RetryPeriod = 2 * time.Second
	}
	return le
}

// validate checks the options that can be checked without the API server.
func (o *Options) validate() error {
	if o.Config == nil {
		return errors.New("k8s: Options.Config is nil: a Source needs a client configuration, such as the one rest.InClusterConfig returns")
	}
	if len(o.Resources) == 0 {
		return errors.New("k8s: Options.Resources is empty: nothing to watch")
	}
	seen := map[schema.GroupResource]bool{}
	for _, r := range o.Resources {
		if r.GVR.Version == "" || r.GVR.Resource == "" {
			return fmt.Errorf("k8s: resource %q: a GVR needs a version and a resource, such as {Version: \"v1\", Resource: \"pods\"}", r.GVR.String())
		}
		if seen[r.GVR.GroupResource()] {
			return fmt.Errorf("k8s: resource %s is listed twice: watch each resource once, in one version", r.GVR.GroupResource())
		}
		seen[r.GVR.GroupResource()] = true
		if _, err := labels.Parse(r.LabelSelector); err != nil {
			return fmt.Errorf("k8s: resource %s: label selector %q: %w", r.GVR.GroupResource(), r.LabelSelector, err)
		}
		if _, err := fields.ParseSelector(r.FieldSelector); err != nil {
			return fmt.Errorf("k8s: resource %s: field selector %q: %w", r.GVR.GroupResource(), r.FieldSelector, err)
		}
		if r.Status < StatusAuto || r.Status > StatusNone {
			return fmt.Errorf("k8s: resource %s: unknown %v", r.GVR.GroupResource(), r.Status)
		}
		nss := map[string]bool{}
		for _, ns := range r.Namespaces {
			if ns == "" {
				return fmt.Errorf("k8s: resource %s: empty namespace in Namespaces (leave Namespaces empty to watch all)", r.GVR.GroupResource())
			}
			if nss[ns] {
				return fmt.Errorf("k8s: resource %s: namespace %q is listed twice", r.GVR.GroupResource(), ns)
			}
			nss[ns] = true
		}
	}
	if err := o.validateConditions(); err != nil {
		return err
	}
	if err := o.validateInformers(); err != nil {
		return err
	}
	if o.LeaderElection != nil && o.Fence != nil {
		return errors.New("k8s: Options.LeaderElection and Options.Fence are both set: the Source's own election fences itself; set Fence only for an election run outside the Source (a manager's)")
	}
	if o.Shards != nil && (o.LeaderElection != nil || o.Fence != nil) {
		return errors.New("k8s: Options.Shards is set with LeaderElection or Fence: a shard ring shares the objects between replicas, an election gives them all to one; choose one")
	}
	if o.Shards != nil && o.Informers != nil {
		return errors.New("k8s: Options.Shards is set with Informers: a shard ring gives the bus the cached objects of the buckets it takes on, which needs the Source's own informers (an Informer of Options.Informers cannot list its objects)")
	}
	if sh := o.Shards; sh != nil {
		ring := sh.Ring
		if ring == "" {
			ring = o.Name
		}
		if ring == "" {
			ring = "opbus"
		}
		if err := sh.validate(ring); err != nil {
			return err
		}
	}
	if le := o.LeaderElection; le != nil {
		if le.Namespace == "" || le.Name == "" {
			return fmt.Errorf("k8s: LeaderElection needs the Namespace and Name of its Lease (got %q/%q)", le.Namespace, le.Name)
		}
		d := le.withDefaults()
		if d.LeaseDuration <= d.RenewDeadline || float64(d.RenewDeadline) <= 1.2*float64(d.RetryPeriod) || d.RetryPeriod <= 0 {
			return fmt.Errorf("k8s: LeaderElection durations: lease %v, renew deadline %v, retry period %v: want lease > renew deadline > 1.2 × retry period > 0",
				d.LeaseDuration, d.RenewDeadline, d.RetryPeriod)
		}
	}
	return nil
}
