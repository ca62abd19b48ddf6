package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1 "open-cluster-management.io/api/cluster/v1"
	"sigs.k8s.io/yaml"
)

func clusterList() *clusterv1.ManagedClusterList {
	return &clusterv1.ManagedClusterList{Items: []clusterv1.ManagedCluster{
		{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster2"},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: false},
		},
		{
			ObjectMeta: metav1.ObjectMeta{Name: "cluster1", Labels: map[string]string{clusterSetLabel: "prod"}},
			Spec:       clusterv1.ManagedClusterSpec{HubAcceptsClient: true},
			Status: clusterv1.ManagedClusterStatus{
				Conditions: []metav1.Condition{{Type: clusterv1.ManagedClusterConditionAvailable, Status: metav1.ConditionTrue}},
				Capacity:   clusterv1.ResourceList{clusterv1.ResourceCPU: resource.MustParse("8"), clusterv1.ResourceMemory: resource.MustParse("32Gi")},
				Version:    clusterv1.ManagedClusterVersion{Kubernetes: "v1.35.2"},
			},
		},
	}}
}

func TestPrintClustersTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printClusters(&out, "table", clusterList()))
	want := "" +
		"NAME       ACCEPTED   AVAILABLE   CLUSTERSET   CPU   MEMORY   KUBERNETES VERSION\n" +
		"cluster1   true       True        prod         8     32Gi     v1.35.2\n" +
		"cluster2   false      Unknown                                 \n"
	assert.Equal(t, want, out.String())
}

func TestPrintClustersJSONAndYAML(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printClusters(&out, "json", clusterList()))
	got := &clusterv1.ManagedClusterList{}
	require.NoError(t, json.Unmarshal(out.Bytes(), got))
	require.Len(t, got.Items, 2)
	assert.Equal(t, "cluster1", got.Items[0].Name)
	assert.Equal(t, "ManagedCluster", got.Items[0].Kind)

	out.Reset()
	require.NoError(t, printClusters(&out, "yaml", clusterList()))
	got = &clusterv1.ManagedClusterList{}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), got))
	assert.Equal(t, "v1.35.2", got.Items[0].Status.Version.Kubernetes)

	assert.Error(t, printClusters(&out, "wide", clusterList()))
}
