package ops

import (
	"context"
	"fmt"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/propagator"
)

// ClusterDetail is one cluster's view of a policy.
type ClusterDetail struct {
	Cluster   string                   `json:"cluster"`
	Compliant policyv1.ComplianceState `json:"compliant"`
	Templates []TemplateDetail         `json:"templates,omitempty"`
}

// TemplateDetail is one template's state on a cluster and its last message.
type TemplateDetail struct {
	Name        string                   `json:"name"`
	Compliant   policyv1.ComplianceState `json:"compliant"`
	LastMessage string                   `json:"lastMessage,omitempty"`
	LastTime    string                   `json:"lastTimestamp,omitempty"`
}

// Description is `describe policy`'s report.
type Description struct {
	Policy   policyv1.Policy `json:"policy"`
	Clusters []ClusterDetail `json:"clusters"`
}

// List returns the root policies of namespace ("" for every namespace), sorted.
func List(ctx context.Context, c client.Reader, namespace string) ([]policyv1.Policy, error) {
	var list policyv1.PolicyList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, fmt.Errorf("list policies: %w", err)
	}
	var out []policyv1.Policy
	for _, p := range list.Items {
		if !propagator.IsReplica(&p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Namespace != out[j].Namespace {
			return out[i].Namespace < out[j].Namespace
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// Describe returns one root policy with each cluster's templates and last messages.
func Describe(ctx context.Context, c client.Reader, namespace, name string) (*Description, error) {
	var p policyv1.Policy
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &p); err != nil {
		return nil, fmt.Errorf("policy %s/%s: %w", namespace, name, err)
	}
	var replicas policyv1.PolicyList
	if err := c.List(ctx, &replicas, client.MatchingLabels{policyv1.RootPolicyLabel: propagator.RootKey(namespace, name)}); err != nil {
		return nil, fmt.Errorf("list the replicas of %s/%s: %w", namespace, name, err)
	}
	return Describing(&p, replicas.Items), nil
}

// Describing builds a Description from a root and its replicas. It is pure.
func Describing(root *policyv1.Policy, replicas []policyv1.Policy) *Description {
	d := &Description{Policy: *root, Clusters: []ClusterDetail{}}
	byCluster := map[string]*policyv1.Policy{}
	for i := range replicas {
		byCluster[replicas[i].Namespace] = &replicas[i]
	}
	for _, s := range root.Status.Status {
		cd := ClusterDetail{Cluster: s.ClusterName, Compliant: s.ComplianceState}
		if r := byCluster[s.ClusterName]; r != nil {
			for _, det := range r.Status.Details {
				if det == nil {
					continue
				}
				td := TemplateDetail{Name: det.TemplateMeta.Name, Compliant: det.ComplianceState}
				if len(det.History) > 0 {
					td.LastMessage = det.History[0].Message
					if !det.History[0].LastTimestamp.IsZero() {
						td.LastTime = det.History[0].LastTimestamp.UTC().Format("2006-01-02T15:04:05Z")
					}
				}
				cd.Templates = append(cd.Templates, td)
			}
		}
		d.Clusters = append(d.Clusters, cd)
	}
	return d
}
