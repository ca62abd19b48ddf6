package propagator

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Metrics are the propagator's Prometheus metrics, served on the hub's metrics endpoint.
type Metrics struct {
	// GovernanceInfo is policy_governance_info{type, policy, policy_namespace,
	// cluster_namespace}: 0 Compliant, 1 NonCompliant, -1 pending or unknown.
	// type="root" has one series per root policy (cluster_namespace empty),
	// type="propagated" one per replica.
	GovernanceInfo *prometheus.GaugeVec
	// Latency is the duration of one root policy's reconcile (read, decide,
	// write the replicas and the status).
	Latency prometheus.Histogram
	// Errors counts propagation errors by stage (read, replica).
	Errors *prometheus.CounterVec

	mu   sync.Mutex
	seen map[string]map[string]bool // root key -> cluster namespaces with a propagated series
}

var (
	defaultOnce    sync.Once
	defaultMetrics *Metrics
)

// DefaultMetrics returns the metrics registered with controller-runtime's
// registry (the hub's metrics endpoint), created once per process.
func DefaultMetrics() *Metrics {
	defaultOnce.Do(func() { defaultMetrics = NewMetrics(ctrlmetrics.Registry) })
	return defaultMetrics
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		GovernanceInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "policy_governance_info",
			Help: "Compliance of a root policy (type=root) or of its replica on a cluster (type=propagated): 0 Compliant, 1 NonCompliant, -1 pending or unknown.",
		}, []string{"type", "policy", "policy_namespace", "cluster_namespace"}),
		Latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "policy_propagation_duration_seconds",
			Help:    "Duration of one root policy's propagation (replicas and status written).",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14),
		}),
		Errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "policy_propagation_errors_total",
			Help: "Policy propagation errors, by stage (read: inputs could not be read; replica: a replica could not be written).",
		}, []string{"stage"}),
		seen: map[string]map[string]bool{},
	}
	if reg != nil {
		reg.MustRegister(m.GovernanceInfo, m.Latency, m.Errors)
	}
	return m
}

// GovernanceValue is the policy_governance_info value of a state.
func GovernanceValue(s policyv1.ComplianceState) float64 {
	switch s {
	case policyv1.Compliant:
		return 0
	case policyv1.NonCompliant:
		return 1
	}
	return -1
}

// observe sets the root's series and those of its replicas, dropping the
// series of replicas that are gone.
func (m *Metrics) observe(root *policyv1.Policy, st policyv1.PolicyStatus, replicas map[string]*policyv1.Policy) {
	m.mu.Lock()
	defer m.mu.Unlock()
	key := RootKey(root.Namespace, root.Name)
	m.GovernanceInfo.WithLabelValues("root", root.Name, root.Namespace, "").Set(GovernanceValue(st.ComplianceState))
	now := map[string]bool{}
	for ns, rep := range replicas {
		now[ns] = true
		m.GovernanceInfo.WithLabelValues("propagated", root.Name, root.Namespace, ns).Set(GovernanceValue(rep.Status.ComplianceState))
	}
	for ns := range m.seen[key] {
		if !now[ns] {
			m.GovernanceInfo.DeleteLabelValues("propagated", root.Name, root.Namespace, ns)
		}
	}
	m.seen[key] = now
}

// forgetRoot drops every series of a deleted root.
func (m *Metrics) forgetRoot(ns, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.GovernanceInfo.DeletePartialMatch(prometheus.Labels{"policy": name, "policy_namespace": ns})
	delete(m.seen, RootKey(ns, name))
}

// reset drops every policy_governance_info series. A hub that restarts its
// controllers in-process (after its apiserver restarted) calls it through
// Setup: a root deleted while the controllers were stopped sends no event
// afterwards, so its series would stay forever; every root that exists is
// reconciled at the start and has its series again within moments.
func (m *Metrics) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.GovernanceInfo.Reset()
	m.seen = map[string]map[string]bool{}
}
