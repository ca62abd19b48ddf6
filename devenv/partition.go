package devenv

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	"flotilla.dev/flotilla/devenv/host"
	"flotilla.dev/flotilla/devenv/node"
)

// partitionRules are the iptables rules (filter table, first in their chains)
// that cut the Pods of a managed cluster's node off from the hub's apiserver,
// in both directions, established connections included, as a network that
// fails silently would: INPUT drops what the Pods send to the apiserver,
// OUTPUT what the apiserver sends them. One direction is not a partition: with
// only the Pods' packets dropped, a watch the klusterlet held open still
// received the hub's events (a deletion among them) for the tens of seconds
// its connection took to time out, and a cut-off cluster removed a work
// (test/chaos found it). The comments name the cluster, for people reading
// `iptables -S`.
func partitionRules(plan node.Plan, index int, cluster, hubPort string) []host.Change {
	comment := []string{"-m", "comment", "--comment", "flotilla partition " + cluster, "-j", "DROP"}
	pods, hub := plan.PodCIDR(index), plan.HostIP()+"/32"
	return []host.Change{
		{Kind: host.KindRule, Table: "filter", Chain: "INPUT",
			Rule: append([]string{"-s", pods, "-d", hub, "-p", "tcp", "-m", "tcp", "--dport", hubPort}, comment...)},
		{Kind: host.KindRule, Table: "filter", Chain: "OUTPUT",
			Rule: append([]string{"-s", hub, "-d", pods, "-p", "tcp", "-m", "tcp", "--sport", hubPort}, comment...)},
	}
}

// partitionTarget finds what a partition of cluster needs: the environment
// must have nodes (the klusterlet runs as a Pod with its own address) and the
// hub must be known.
func partitionTarget(opts *Options, cluster string) (*host.Journal, []host.Change, error) {
	if err := opts.defaults(); err != nil {
		return nil, nil, err
	}
	rec, err := readRecord(opts.DataDir)
	if err != nil {
		return nil, nil, fmt.Errorf("no Flotilla environment in %s: %w", opts.DataDir, err)
	}
	if !rec.Nodes {
		return nil, nil, fmt.Errorf("the environment in %s has no nodes: partitions cut a cluster's Pods off the hub, start it with `flotilla dev up --nodes`", opts.DataDir)
	}
	if !slices.Contains(rec.Clusters, cluster) {
		return nil, nil, fmt.Errorf("no managed cluster %q in %s (clusters: %v)", cluster, opts.DataDir, rec.Clusters)
	}
	st, err := status(opts, rec)
	if err != nil {
		return nil, nil, err
	}
	var hubURL string
	for _, c := range st.Components {
		if c.Name == hubName && c.Kind == "control-plane" {
			hubURL = c.URL
		}
	}
	u, err := url.Parse(hubURL)
	if err != nil || u.Port() == "" {
		return nil, nil, fmt.Errorf("the hub's apiserver address is not known (%q): is the environment up?", hubURL)
	}
	j, err := host.Open(opts.journalPath())
	if err != nil {
		return nil, nil, err
	}
	return j, partitionRules(node.NewPlan(opts.DataDir), nodeIndex(rec, cluster), cluster, u.Port()), nil
}

// Partition cuts managed cluster off the hub: its Pods (the klusterlet and
// addon agents) and the hub's apiserver no longer reach each other, while the
// cluster itself keeps running. The rules are recorded in the environment's
// host journal, so `dev down` removes them if Heal is never called.
func Partition(opts Options, cluster string) error {
	j, rules, err := partitionTarget(&opts, cluster)
	if err != nil {
		return err
	}
	for i, r := range rules {
		if err := j.InsertRule(r.Table, r.Chain, r.Rule...); err != nil {
			// Half a partition is none (see partitionRules): take back what went in.
			for _, done := range rules[:i+1] {
				_ = j.RemoveRule(done.Table, done.Chain, done.Rule...)
			}
			return fmt.Errorf("partition %s: %w", cluster, err)
		}
		opts.progress("%s: cut off from the hub (iptables -t %s -I %s 1 %s)", cluster, r.Table, r.Chain, strings.Join(r.Rule, " "))
	}
	return nil
}

// Heal ends a partition made by Partition (none is fine).
func Heal(opts Options, cluster string) error {
	j, rules, err := partitionTarget(&opts, cluster)
	if err != nil {
		return err
	}
	for _, r := range rules {
		if err := j.RemoveRule(r.Table, r.Chain, r.Rule...); err != nil {
			return fmt.Errorf("heal %s: %w", cluster, err)
		}
	}
	opts.progress("%s: reaches the hub again", cluster)
	return nil
}
