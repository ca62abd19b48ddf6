package scheduling

import (
	"fmt"
	"strconv"

	clusterv1beta1 "open-cluster-management.io/api/cluster/v1beta1"
)

// MaxDecisionsPerObject is how many clusters one PlacementDecision lists at most.
const MaxDecisionsPerObject = 100

// Page is one PlacementDecision to write.
type Page struct {
	// Name is "<placement>-decision-<N>", N counting from 1.
	Name string
	// Labels are the OCM labels: placement, decision-group-index, decision-group-name.
	Labels    map[string]string
	Decisions []clusterv1beta1.ClusterDecision
}

// Paginate turns groups into PlacementDecisions of at most MaxDecisionsPerObject
// clusters; every group gets at least one (possibly empty) page. withScores records
// each cluster's score (only meaningful when the placement sorts by score).
func Paginate(placement string, groups []Group, withScores bool) []Page {
	var pages []Page
	for _, g := range groups {
		start := 0
		for {
			end := min(start+MaxDecisionsPerObject, len(g.Clusters))
			page := Page{
				Name: fmt.Sprintf("%s-decision-%d", placement, len(pages)+1),
				Labels: map[string]string{
					clusterv1beta1.PlacementLabel:          placement,
					clusterv1beta1.DecisionGroupIndexLabel: strconv.Itoa(int(g.Index)),
					clusterv1beta1.DecisionGroupNameLabel:  g.Name,
				},
				Decisions: []clusterv1beta1.ClusterDecision{},
			}
			for _, d := range g.Clusters[start:end] {
				cd := clusterv1beta1.ClusterDecision{ClusterName: d.ClusterName}
				if withScores {
					cd.Score = d.Score
				}
				page.Decisions = append(page.Decisions, cd)
			}
			pages = append(pages, page)
			start = end
			if start >= len(g.Clusters) {
				break
			}
		}
	}
	return pages
}
