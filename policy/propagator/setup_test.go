package propagator_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/config"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"flotilla.dev/flotilla/internal/scheme"
	"flotilla.dev/flotilla/policy/propagator"
)

// The hub runs Setup again on each in-process restart of its controllers
// (after its apiserver restarted). A root deleted while they were stopped
// sends no event afterwards: its policy_governance_info series must not
// outlive the restart.
func TestSetupDropsTheSeriesOfRootsGoneMeanwhile(t *testing.T) {
	m := propagator.DefaultMetrics()
	m.GovernanceInfo.WithLabelValues("root", "deleted-while-stopped", "nowhere", "").Set(1)
	n, err := governanceSeries(map[string]string{"policy": "deleted-while-stopped"})
	require.NoError(t, err)
	require.Equal(t, 1, n)

	mgr, err := ctrl.NewManager(hubConfig, ctrl.Options{Scheme: scheme.New(), Metrics: metricsserver.Options{BindAddress: "0"},
		Controller: config.Controller{SkipNameValidation: ptr.To(true)}})
	require.NoError(t, err)
	require.NoError(t, propagator.Setup(mgr, propagator.Options{}))
	n, err = governanceSeries(map[string]string{"policy": "deleted-while-stopped"})
	require.NoError(t, err)
	assert.Equal(t, 0, n)
}

// governanceSeries counts the policy_governance_info series whose labels
// include match.
func governanceSeries(match map[string]string) (int, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, f := range families {
		if f.GetName() != "policy_governance_info" {
			continue
		}
		for _, m := range f.GetMetric() {
			found := 0
			for _, l := range m.GetLabel() {
				if v, ok := match[l.GetName()]; ok && v == l.GetValue() {
					found++
				}
			}
			if found == len(match) {
				n++
			}
		}
	}
	return n, nil
}
