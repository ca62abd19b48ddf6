package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/hub/placement/ops"
)

func placementViews() []ops.PlacementView {
	sat := func(status metav1.ConditionStatus, reason string) []metav1.Condition {
		return []metav1.Condition{{Type: clusterv1beta1.PlacementConditionSatisfied, Status: status, Reason: reason}}
	}
	return []ops.PlacementView{
		{Placement: clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "apps"},
			Status: clusterv1beta1.PlacementStatus{NumberOfSelectedClusters: 2, Conditions: sat("True", "AllDecisionsScheduled")}},
			SelectedClusters: []string{"cluster1", "cluster2"}},
		{Placement: clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "apps"},
			Status: clusterv1beta1.PlacementStatus{Conditions: sat("True", "AllDecisionsScheduled")}},
			SelectedClusters: []string{"c1", "c2", "c3", "c4", "c5", "c6", "c7"}},
		{Placement: clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "none", Namespace: "apps"},
			Status: clusterv1beta1.PlacementStatus{Conditions: sat("False", "NoManagedClusterSetBindings")}},
			SelectedClusters: []string{}},
		{Placement: clusterv1beta1.Placement{ObjectMeta: metav1.ObjectMeta{Name: "new", Namespace: "apps"}}, SelectedClusters: []string{}},
	}
}

func TestPrintPlacementsTable(t *testing.T) {
	var out bytes.Buffer
	require.NoError(t, printPlacements(&out, "table", placementViews()))
	want := "" +
		"NAMESPACE   NAME   SUCCEEDED   REASON                        SELECTEDCLUSTERS   CLUSTERS\n" +
		"apps        web    True        AllDecisionsScheduled         2                  cluster1,cluster2\n" +
		"apps        big    True        AllDecisionsScheduled         7                  c1,c2,c3,c4,c5,+2 more\n" +
		"apps        none   False       NoManagedClusterSetBindings   0                  <none>\n" +
		"apps        new    Unknown                                   0                  <none>\n"
	assert.Equal(t, want, out.String())
}

func TestPrintPlacementsJSONAndYAML(t *testing.T) {
	for _, format := range []string{"json", "yaml"} {
		var out bytes.Buffer
		require.NoError(t, printPlacements(&out, format, placementViews()[:1]))
		raw := out.Bytes()
		if format == "yaml" {
			var err error
			raw, err = yaml.YAMLToJSON(raw)
			require.NoError(t, err)
		}
		var got struct {
			Kind  string `json:"kind"`
			Items []struct {
				Metadata         metav1.ObjectMeta `json:"metadata"`
				SelectedClusters []string          `json:"selectedClusters"`
			} `json:"items"`
		}
		require.NoError(t, json.Unmarshal(raw, &got), format)
		assert.Equal(t, "List", got.Kind)
		require.Len(t, got.Items, 1)
		assert.Equal(t, "web", got.Items[0].Metadata.Name)
		assert.Equal(t, []string{"cluster1", "cluster2"}, got.Items[0].SelectedClusters)
	}
}

func TestParseLabels(t *testing.T) {
	got, err := parseLabels([]string{"env=prod", "tier="})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"env": "prod", "tier": ""}, got)
	_, err = parseLabels([]string{"justakey"})
	assert.ErrorContains(t, err, `"justakey": want key=value`)
}
