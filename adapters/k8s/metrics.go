package k8s

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/opbus/opbus"
)

// Metrics is an [opbus.Observer] that keeps Prometheus metrics of a bus and
// of the adapter's writes. Create it with [NewMetrics], set it as
// [Options].Metrics; [Source.BusOptions] then makes it hear what the bus
// observes (besides the bus's own Observer) and the Source times its writes
// into it. Every metric is named opbus_…; labels are handler and kind (the
// key's kind, such as Widget.test.opbus.dev):
//
//	opbus_handler_runs_total{handler,kind}            handler runs
//	opbus_handler_failures_total{handler,kind}        runs that returned an error or panicked
//	opbus_handler_retries_total{handler,kind}         runs that were retries (attempt > 1)
//	opbus_handler_duration_seconds{handler,kind}      run latency (histogram)
//	opbus_retries_scheduled_total{kind}               retries the bus scheduled
//	opbus_states_observed_total{kind}                 states queued
//	opbus_states_coalesced_total{kind}                backlogs coalesced to their latest state
//	opbus_queue_depth                                 states waiting across all keys (of every running bus)
//	opbus_store_write_duration_seconds{kind}          record writes (histogram)
//	opbus_status_write_duration_seconds{kind}         status writes (histogram)
//	opbus_write_failures_total{kind,write}            failed writes, write="store" or "status"
//	opbus_timer_runs_total{handler,kind}              runs due to a schedule (On.Every, Event.Again)
//	opbus_timer_lateness_seconds{handler,kind}        how long after its due time a due run started (histogram)
//	opbus_leader                                      1 while this replica handles, else 0
//	opbus_source_leader{source}                       the same for each Source, by its Options.Name
//	opbus_source_queue_depth{source}                  opbus_queue_depth for each Source, by its Options.Name
//
// One Metrics may serve several Sources of a process (as ctrlmgr shares
// one): opbus_leader is then 1 while any of them handles, checked at
// each scrape (a leader past its Lease's renew deadline no longer
// does), and opbus_queue_depth sums their buses' queues.
//
// It is an [opbus.TimerObserver] too, which gives the timer metrics.
// Its methods are safe for concurrent use.
type Metrics struct {
	gatherer prometheus.Gatherer

	runs, failures, retries *prometheus.CounterVec
	duration                *prometheus.HistogramVec
	scheduled, observed     *prometheus.CounterVec
	coalesced               *prometheus.CounterVec
	storeWrites             *prometheus.HistogramVec
	statusWrites            *prometheus.HistogramVec
	writeFailures           *prometheus.CounterVec
	timerRuns               *prometheus.CounterVec
	lateness                *prometheus.HistogramVec

	queued atomic.Int64 // the last queue depth a bus reported

	handoffSecs *prometheus.HistogramVec // opbus_shard_handoff_duration_seconds

	mu    sync.Mutex
	leads map[*Source]*opbus.Bus // the Sources leading now and their buses
	known map[*Source]bool       // every Source that has led, for the per-Source gauges
}

var _ opbus.TimerObserver = (*Metrics)(nil)

// MetricsOptions configures [NewMetrics]; nil means the defaults.
type MetricsOptions struct {
	// Registerer receives the metrics; nil means a new registry of their
	// own. [Metrics.Handler] serves Registerer if it is also a
	// [prometheus.Gatherer] (a *prometheus.Registry is), else
	// prometheus.DefaultGatherer.
	Registerer prometheus.Registerer
	// Buckets are the histograms' upper bounds in seconds; nil means
	// prometheus.DefBuckets (5ms to 10s).
	Buckets []float64
}

// NewMetrics creates the metrics and registers them. It returns an error
// if the Registerer already holds metrics of the same names (two Sources
// on one registry need one Metrics each on registries of their own, or
// one Metrics shared: its labels tell kinds apart).
func NewMetrics(opts *MetricsOptions) (*Metrics, error) {
	if opts == nil {
		opts = &MetricsOptions{}
	}
	reg := opts.Registerer
	var gatherer prometheus.Gatherer
	if reg == nil {
		r := prometheus.NewRegistry()
		reg, gatherer = r, r
	} else if g, ok := reg.(prometheus.Gatherer); ok {
		gatherer = g
	} else {
		gatherer = prometheus.DefaultGatherer
	}
	buckets := opts.Buckets
	if buckets == nil {
		buckets = prometheus.DefBuckets
	}
	for i := 1; i < len(buckets); i++ {
		if buckets[i] <= buckets[i-1] {
			return nil, fmt.Errorf("k8s: MetricsOptions.Buckets %v: want increasing upper bounds", buckets)
		}
	}
	hl := []string{"handler", "kind"}
	m := &Metrics{gatherer: gatherer, leads: map[*Source]*opbus.Bus{}, known: map[*Source]bool{}}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_handler_runs_total", Help: "Handler runs."}, hl)
	m.failures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_handler_failures_total", Help: "Handler runs that returned an error or panicked."}, hl)
	m.retries = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_handler_retries_total", Help: "Handler runs that were retries of a failed run (attempt > 1)."}, hl)
	m.duration = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opbus_handler_duration_seconds", Help: "Handler run latency.", Buckets: buckets}, hl)
	m.scheduled = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_retries_scheduled_total", Help: "Retries the bus scheduled after a failed run."}, []string{"kind"})
	m.observed = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_states_observed_total", Help: "Object states queued for the bus."}, []string{"kind"})
	m.coalesced = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_states_coalesced_total", Help: "Backlogs of one key coalesced to their latest state."}, []string{"kind"})
	m.storeWrites = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opbus_store_write_duration_seconds", Help: "Latency of record writes (the record annotation).", Buckets: buckets}, []string{"kind"})
	m.statusWrites = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opbus_status_write_duration_seconds", Help: "Latency of status writes (conditions or the status annotation).", Buckets: buckets}, []string{"kind"})
	m.writeFailures = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_write_failures_total", Help: "Record and status writes that failed."}, []string{"kind", "write"})
	m.timerRuns = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "opbus_timer_runs_total", Help: "Handler runs due to a schedule (On.Every, Event.Again)."}, hl)
	m.lateness = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opbus_timer_lateness_seconds", Help: "How long after its due time a run due to a schedule started.", Buckets: buckets}, hl)
	leader := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "opbus_leader", Help: "1 while this replica watches and handles (it leads, or runs without leader election), else 0."}, m.leader)
	depth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "opbus_queue_depth", Help: "Object states waiting to be dispatched, across all keys."}, m.depth)
	perSource := sourceGauges{m: m,
		leader: prometheus.NewDesc("opbus_source_leader", "1 while the Source of this name watches and handles, else 0 (once it has led).", []string{"source"}, nil),
		depth:  prometheus.NewDesc("opbus_source_queue_depth", "Object states waiting to be dispatched by the running bus of the Source of this name.", []string{"source"}, nil)}
	m.handoffSecs = prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "opbus_shard_handoff_duration_seconds", Help: "How long hand-offs of shard buckets took, by direction (acquired, released).", Buckets: buckets}, []string{"direction"})
	for _, c := range []prometheus.Collector{m.handoffSecs, newShardGauges(m), m.runs, m.failures, m.retries, m.duration, m.scheduled, m.observed, m.coalesced, m.storeWrites, m.statusWrites, m.writeFailures, m.timerRuns, m.lateness, leader, depth, perSource} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("k8s: registering metrics: %w", err)
		}
	}
	return m, nil
}

// Handler returns an [http.Handler] that serves the metrics in
// Prometheus' text format, as controller-runtime serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.gatherer, promhttp.HandlerOpts{})
}

// Observed implements [opbus.Observer].
func (m *Metrics) Observed(key opbus.Key, queued int) {
	m.queued.Store(int64(queued))
	m.observed.WithLabelValues(key.Kind).Inc()
}

// Coalesced implements [opbus.Observer].
func (m *Metrics) Coalesced(key opbus.Key) { m.coalesced.WithLabelValues(key.Kind).Inc() }

// Handled implements [opbus.Observer].
func (m *Metrics) Handled(key opbus.Key, handler string, attempt int, took time.Duration, err error) {
	m.runs.WithLabelValues(handler, key.Kind).Inc()
	m.duration.WithLabelValues(handler, key.Kind).Observe(took.Seconds())
	if attempt > 1 {
		m.retries.WithLabelValues(handler, key.Kind).Inc()
	}
	if err != nil {
		m.failures.WithLabelValues(handler, key.Kind).Inc()
	}
}

// Retrying implements [opbus.Observer].
func (m *Metrics) Retrying(key opbus.Key, after time.Duration) {
	m.scheduled.WithLabelValues(key.Kind).Inc()
}

// TimerDue implements [opbus.TimerObserver].
func (m *Metrics) TimerDue(key opbus.Key, handler string, late time.Duration) {
	m.timerRuns.WithLabelValues(handler, key.Kind).Inc()
	m.lateness.WithLabelValues(handler, key.Kind).Observe(late.Seconds())
}

// depth is the queue depth now: that of the running buses, else the last
// reported.
func (m *Metrics) depth() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.leads) == 0 {
		return float64(m.queued.Load())
	}
	n := 0
	for _, b := range m.leads {
		n += b.Stats().Queued
	}
	return float64(n)
}

// leader is 1 while a Source of these metrics leads, checked now: a
// leader past its Lease's renew deadline no longer does ([Source.Leading]).
func (m *Metrics) leader() float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	for s := range m.leads {
		if s.Leading() {
			return 1
		}
	}
	return 0
}

// wrote records a write that began at begin; write is "store" or "status".
// A write that was not needed (the object is gone, nothing changed) counts
// as one all the same: it is what the bus waited for.
func (m *Metrics) wrote(write string, key opbus.Key, begin time.Time, err error) {
	if m == nil {
		return
	}
	h := m.storeWrites
	if write == "status" {
		h = m.statusWrites
	}
	h.WithLabelValues(key.Kind).Observe(time.Since(begin).Seconds())
	if err != nil && !errors.Is(err, opbus.ErrHalt) {
		m.writeFailures.WithLabelValues(key.Kind, write).Inc()
	}
}

// leading records whether s handles, with which bus.
func (m *Metrics) leading(s *Source, bus *opbus.Bus, on bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if on {
		m.leads[s] = bus
		m.known[s] = true
		return
	}
	delete(m.leads, s)
	if len(m.leads) == 0 {
		m.queued.Store(0)
	}
}

// sourceGauges are opbus_source_leader and opbus_source_queue_depth: the
// leadership and queue depth of each Source of a Metrics by its
// [Options].Name, read at each scrape. Sources of one name count as one
// (leading if any leads, their queues summed).
type sourceGauges struct {
	m             *Metrics
	leader, depth *prometheus.Desc
}

func (g sourceGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.leader
	ch <- g.depth
}

func (g sourceGauges) Collect(ch chan<- prometheus.Metric) {
	type state struct{ leader, depth float64 }
	by := map[string]*state{}
	g.m.mu.Lock()
	for s := range g.m.known {
		st := by[s.name]
		if st == nil {
			st = &state{}
			by[s.name] = st
		}
		if b, ok := g.m.leads[s]; ok {
			st.depth += float64(b.Stats().Queued)
			if s.Leading() {
				st.leader = 1
			}
		}
	}
	g.m.mu.Unlock()
	for name, st := range by {
		ch <- prometheus.MustNewConstMetric(g.leader, prometheus.GaugeValue, st.leader, name)
		ch <- prometheus.MustNewConstMetric(g.depth, prometheus.GaugeValue, st.depth, name)
	}
}
