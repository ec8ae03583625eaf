package k8s

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// shardGauges are the shard ring metrics of each sharded Source of a
// Metrics, by its [Options].Name, read at each scrape:
// opbus_shard_buckets_owned, opbus_shard_keys_owned,
// opbus_shard_handoffs_total and opbus_shard_objects_not_owned_total.
// Sources of one name are summed.
type shardGauges struct {
	m                               *Metrics
	buckets, keys, handoffs, notOwn *prometheus.Desc
}

func newShardGauges(m *Metrics) shardGauges {
	l := []string{"source"}
	return shardGauges{m: m,
		buckets:  prometheus.NewDesc("opbus_shard_buckets_owned", "Buckets of the hash space (1/256 each) whose objects this replica handles.", l, nil),
		keys:     prometheus.NewDesc("opbus_shard_keys_owned", "Objects seen whose shard hash lies in the buckets this replica handles.", l, nil),
		handoffs: prometheus.NewDesc("opbus_shard_handoffs_total", "Hand-offs of buckets: direction acquired (taken on) or released (given up).", []string{"source", "direction"}, nil),
		notOwn:   prometheus.NewDesc("opbus_shard_objects_not_owned_total", "Object states received by the watch that belonged to another replica (filtered on this side).", l, nil),
	}
}

func (g shardGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- g.buckets
	ch <- g.keys
	ch <- g.handoffs
	ch <- g.notOwn
}

func (g shardGauges) Collect(ch chan<- prometheus.Metric) {
	type state struct{ buckets, keys, acquired, released, notOwned float64 }
	by := map[string]*state{}
	g.m.mu.Lock()
	var shs []*sharder
	var names []string
	for s := range g.m.known {
		s.mu.Lock()
		sh := s.sharder
		s.mu.Unlock()
		if sh != nil {
			shs, names = append(shs, sh), append(names, s.name)
		}
	}
	g.m.mu.Unlock()
	for i, sh := range shs {
		st := by[names[i]]
		if st == nil {
			st = &state{}
			by[names[i]] = st
		}
		sh.mu.Lock()
		owned := sh.owned
		sh.mu.Unlock()
		st.buckets += float64(owned.count())
		in, _ := sh.keys.count(owned)
		st.keys += float64(in)
		st.acquired += float64(sh.acquired.Load())
		st.released += float64(sh.released.Load())
		st.notOwned += float64(sh.notOwned.Load())
	}
	for name, st := range by {
		ch <- prometheus.MustNewConstMetric(g.buckets, prometheus.GaugeValue, st.buckets, name)
		ch <- prometheus.MustNewConstMetric(g.keys, prometheus.GaugeValue, st.keys, name)
		ch <- prometheus.MustNewConstMetric(g.handoffs, prometheus.CounterValue, st.acquired, name, "acquired")
		ch <- prometheus.MustNewConstMetric(g.handoffs, prometheus.CounterValue, st.released, name, "released")
		ch <- prometheus.MustNewConstMetric(g.notOwn, prometheus.CounterValue, st.notOwned, name)
	}
}

// handoff records how long a hand-off of buckets took: direction
// "released" from the decision to the end of the bus's Release, or
// "acquired" from the claim to the end of the bus's Acquire.
func (m *Metrics) handoff(direction string, took time.Duration) {
	if m == nil {
		return
	}
	m.handoffSecs.WithLabelValues(direction).Observe(took.Seconds())
}
