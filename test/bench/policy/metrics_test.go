package policy

import (
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"flotilla.dev/flotilla/policy/configpolicy"
)

func counterValue(m *configpolicy.Metrics, result string) float64 {
	return testutil.ToFloat64(m.Evaluations.WithLabelValues(result))
}

// histogram returns the number and total duration of evaluations.
func histogram(m *configpolicy.Metrics) (int, time.Duration) {
	var out dto.Metric
	if err := m.EvaluationSeconds.Write(&out); err != nil {
		return 0, 0
	}
	h := out.GetHistogram()
	return int(h.GetSampleCount()), time.Duration(h.GetSampleSum() * float64(time.Second))
}
