package configpolicy

import (
	"github.com/prometheus/client_golang/prometheus"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Metrics are the engine's Prometheus metrics.
type Metrics struct {
	// EvaluationSeconds is the duration of one policy evaluation (including enforce).
	EvaluationSeconds prometheus.Histogram
	// Evaluations counts evaluations by result (Compliant, NonCompliant).
	Evaluations *prometheus.CounterVec
	// GovernanceInfo is 0 for a Compliant policy, 1 NonCompliant, -1 unknown.
	GovernanceInfo *prometheus.GaugeVec
}

// NewMetrics creates the metrics and registers them with reg (nil: not registered).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		EvaluationSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "config_policy_evaluation_duration_seconds",
			Help:    "Duration of one ConfigurationPolicy evaluation, enforce included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 16),
		}),
		Evaluations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "config_policy_evaluation_total",
			Help: "ConfigurationPolicy evaluations, by result.",
		}, []string{"result"}),
		GovernanceInfo: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "cluster_policy_governance_info",
			Help: "Compliance of a policy on this cluster: 0 Compliant, 1 NonCompliant, -1 unknown.",
		}, []string{"kind", "policy", "policy_namespace"}),
	}
	if reg != nil {
		reg.MustRegister(m.EvaluationSeconds, m.Evaluations, m.GovernanceInfo)
	}
	return m
}

func governanceValue(s policyv1.ComplianceState) float64 {
	switch s {
	case policyv1.Compliant:
		return 0
	case policyv1.NonCompliant:
		return 1
	}
	return -1
}
