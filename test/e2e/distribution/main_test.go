// Package distribution_test runs ManifestWorkReplicaSets with a
// DistributionPolicy end to end (issue 31): a hub (hub.Run, webhooks
// included) and three klusterlets in-process on real apiservers, the works
// applied by the real work agents, and what lands on each cluster read from
// that cluster's apiserver.
package distribution_test

import (
	"os"
	"testing"
	"time"

	"flotilla.dev/flotilla/test/fleet"
)

var f *fleet.Fleet

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	os.Exit(fleet.Main(m, fleet.Options{Clusters: 3, Join: true}, &f))
}
