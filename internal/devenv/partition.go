package devenv

import (
	"fmt"
	"net/url"
	"slices"

	"flotilla.dev/flotilla/internal/host"
	"flotilla.dev/flotilla/internal/node"
)

// partitionRule is the iptables rule (filter INPUT, first) that cuts the Pods
// of a managed cluster's node off from the hub's apiserver: their packets to
// it are dropped, established connections included, as a network that fails
// silently would. The comment names the cluster, for people reading
// `iptables -S`.
func partitionRule(plan node.Plan, index int, cluster, hubPort string) []string {
	return []string{"-s", plan.PodCIDR(index), "-d", plan.HostIP() + "/32", "-p", "tcp", "-m", "tcp", "--dport", hubPort,
		"-m", "comment", "--comment", "flotilla partition " + cluster, "-j", "DROP"}
}

// partitionTarget finds what a partition of cluster needs: the environment
// must have nodes (the klusterlet runs as a Pod with its own address) and the
// hub must be known.
func partitionTarget(opts *Options, cluster string) (*host.Journal, []string, error) {
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
	return j, partitionRule(node.NewPlan(opts.DataDir), nodeIndex(rec, cluster), cluster, u.Port()), nil
}

// Partition cuts managed cluster off the hub: its Pods (the klusterlet and
// addon agents) can no longer reach the hub's apiserver, while the cluster
// itself keeps running. The rule is recorded in the environment's host
// journal, so `dev down` removes it if Heal is never called.
func Partition(opts Options, cluster string) error {
	j, rule, err := partitionTarget(&opts, cluster)
	if err != nil {
		return err
	}
	if err := j.InsertRule("filter", "INPUT", rule...); err != nil {
		return fmt.Errorf("partition %s: %w", cluster, err)
	}
	opts.progress("%s: cut off from the hub (iptables -t filter %v)", cluster, rule)
	return nil
}

// Heal ends a partition made by Partition (none is fine).
func Heal(opts Options, cluster string) error {
	j, rule, err := partitionTarget(&opts, cluster)
	if err != nil {
		return err
	}
	if err := j.RemoveRule("filter", "INPUT", rule...); err != nil {
		return fmt.Errorf("heal %s: %w", cluster, err)
	}
	opts.progress("%s: reaches the hub again", cluster)
	return nil
}

// Partitioned tells whether cluster is cut off from the hub.
func Partitioned(opts Options, cluster string) (bool, error) {
	j, rule, err := partitionTarget(&opts, cluster)
	if err != nil {
		return false, err
	}
	return j.Has(host.Change{Kind: host.KindRule, Table: "filter", Chain: "INPUT", Rule: rule}), nil
}
