// Package search_test tests fleet search end to end on real apiservers: a
// hub (hub.Run with the search index and the aggregated API) and two
// klusterlets, in-process, with the search addon enabled through the addon
// framework and its agents running next to the klusterlets with the hub
// credentials registration gave them.
package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"flotilla.dev/flotilla/addons/ops"
	"flotilla.dev/flotilla/hub"
	"flotilla.dev/flotilla/internal/aggregated"
	"flotilla.dev/flotilla/internal/aggregated/aggregatedtest"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/search/agent"
	"flotilla.dev/flotilla/search/searchapi"
	"flotilla.dev/flotilla/test/fleet"
)

var f *fleet.Fleet

const (
	timeout = 2 * time.Minute
	tick    = 200 * time.Millisecond
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "search-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ip, err := aggregated.HostIP()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := fleet.Main(m, fleet.Options{Clusters: 2, Join: true,
		Hub: hub.Options{SearchDB: filepath.Join(dir, "search.db"), APIAddress: ip.String(), RemoveWebhooksOnStop: true},
		Cluster: func(ctx context.Context, f *fleet.Fleet, i int) error {
			// The agent next to the klusterlet (OCM's Hosted mode, as
			// `flotilla dev` runs it): it waits for its hub credential.
			go func() {
				_ = agent.Run(ctx, agent.Options{SpokeConfig: f.Clusters[i].Config, ClusterName: f.Clusters[i].Name,
					FlushInterval: 50 * time.Millisecond, LeaseDuration: 5 * time.Second, CredentialInterval: 500 * time.Millisecond})
			}()
			return nil
		},
		Setup: setup}, &f)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// setup labels the clusters env=prod (cluster1) and env=dev (cluster2),
// enables the search addon on both, and waits for the search API.
func setup(ctx context.Context, f *fleet.Fleet) error {
	for name, env := range map[string]string{"cluster1": "prod", "cluster2": "dev"} {
		mc := &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: name}}
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"env":"`+env+`"}}}`))
		if err := f.Client.Patch(ctx, mc, patch); err != nil {
			return err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, tick, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := ops.Enable(ctx, f.Client, ops.EnableOptions{Names: []string{ocm.SearchAddon}, Clusters: f.Names})
		return err == nil, nil // the hub creates the ClusterManagementAddOn as it starts
	}); err != nil {
		return fmt.Errorf("enable the search addon: %w", err)
	}
	return aggregatedtest.WaitAvailable(ctx, f.Hub.Config, searchapi.APIServiceName, timeout)
}
