//go:build interop && linux

package interop

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/test/bench/benchutil"
)

// What one cluster's agents cost their hub apiserver in watches, measured
// here on both sides: upstream's registration and work agents on the Flotilla
// hub, Flotilla's klusterlet on the upstream hub. Each watch the apiserver
// serves holds goroutines and a cache watcher's buffers for as long as it
// lasts (docs/benchmarks.md, what Flotilla costs the hub apiserver).

// watchGauge matches the apiserver's gauge of requests in flight that last:
// its WATCHes by group, resource and scope.
var watchGauge = regexp.MustCompile(`^apiserver_longrunning_requests\{(.*)\} ([0-9.e+]+)$`)

var label = regexp.MustCompile(`(\w+)="([^"]*)"`)

// hubWatches counts the WATCHes the apiserver at cfg serves now, by
// resource and scope ("managedclusters (resource)": one object by name).
func hubWatches(ctx context.Context, cfg *rest.Config) (map[string]int, error) {
	body, err := benchutil.RawMetrics(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read the hub apiserver's /metrics: %w", err)
	}
	out := map[string]int{}
	for _, line := range strings.Split(string(body), "\n") {
		m := watchGauge.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range label.FindAllStringSubmatch(m[1], -1) {
			labels[l[1]] = l[2]
		}
		n, err := strconv.ParseFloat(m[2], 64)
		if err != nil || labels["verb"] != "WATCH" || n == 0 {
			continue
		}
		out[labels["resource"]+" ("+labels["scope"]+")"] += int(n)
	}
	return out, nil
}

// watchesAdded describes the watches in after beyond before, in two groups:
// scoped to a namespace or one object by name (what a cluster's agents
// watch: their cluster namespace, their own ManagedCluster) and cluster-wide
// (the hub's own informers started in between, and an agent's
// label-selected CSR informer). The metric names no client, so the split is
// what tells them apart.
func watchesAdded(before, after map[string]int) string {
	var scoped, wide []string
	nScoped, nWide := 0, 0
	for k, n := range after {
		d := n - before[k]
		if d <= 0 {
			continue
		}
		part := fmt.Sprintf("%s %d", k, d)
		if strings.HasSuffix(k, "(cluster)") {
			wide, nWide = append(wide, part), nWide+d
		} else {
			scoped, nScoped = append(scoped, part), nScoped+d
		}
	}
	sort.Strings(scoped)
	sort.Strings(wide)
	return fmt.Sprintf("scoped %d: %s; cluster-wide %d: %s", nScoped, strings.Join(scoped, ", "), nWide, strings.Join(wide, ", "))
}

// watchCount is a check's body: the watches added since before.
func watchCount(ctx context.Context, cfg *rest.Config, before map[string]int) (string, error) {
	if before == nil {
		return "", fmt.Errorf("no count from before the agents started")
	}
	after, err := hubWatches(ctx, cfg)
	if err != nil {
		return "", err
	}
	return watchesAdded(before, after), nil
}
