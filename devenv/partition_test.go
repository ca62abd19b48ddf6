package devenv

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/devenv/node"
)

// A partition cuts both directions between a cluster's Pods and the hub's
// apiserver: with only the Pods' packets dropped, the hub's watch events
// still reached a cut-off klusterlet.
func TestPartitionRulesCutBothDirections(t *testing.T) {
	plan := node.Plan{Octet: 129}
	rules := partitionRules(plan, 2, "cluster2", "26540")
	comment := []string{"-m", "comment", "--comment", "flotilla partition cluster2", "-j", "DROP"}
	assert.Equal(t, []host.Change{
		{Kind: host.KindRule, Table: "filter", Chain: "INPUT",
			Rule: append([]string{"-s", "10.129.3.0/24", "-d", "10.129.0.1/32", "-p", "tcp", "-m", "tcp", "--dport", "26540"}, comment...)},
		{Kind: host.KindRule, Table: "filter", Chain: "OUTPUT",
			Rule: append([]string{"-s", "10.129.0.1/32", "-d", "10.129.3.0/24", "-p", "tcp", "-m", "tcp", "--sport", "26540"}, comment...)},
	}, rules)
}
