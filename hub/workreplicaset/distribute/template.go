package distribute

import (
	"fmt"

	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Cluster is what a render knows of a managed cluster: its name, labels,
// ClusterClaims (status.clusterClaims) and its allocatable resources
// (status.allocatable, else status.capacity; Capacity division).
type Cluster struct {
	Name        string
	Labels      map[string]string
	Claims      map[string]string
	Allocatable corev1.ResourceList
}

// templateExpr matches one template: {{ cluster.name }},
// {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}, with optional
// spaces inside the braces.
var (
	templateOpen = "{{"
	templateExpr = regexp.MustCompile(`^\{\{\s*cluster\.(name|labels\[([A-Za-z0-9._/-]+)\]|claims\[([A-Za-z0-9._/-]+)\])\s*\}\}`)
)

// Expand replaces each template in s with the cluster's value. Every "{{"
// starts a template; one that is not well formed, or names a label or claim
// the cluster does not have, is an error saying which.
func Expand(s string, c Cluster) (string, error) {
	return expand(s, c, false)
}

// CheckTemplate says whether every template in s is well formed: what
// admission can judge without a cluster.
func CheckTemplate(s string) error {
	_, err := expand(s, Cluster{}, true)
	return err
}

func expand(s string, c Cluster, syntaxOnly bool) (string, error) {
	if !strings.Contains(s, templateOpen) {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, templateOpen)
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		s = s[i:]
		m := templateExpr.FindStringSubmatch(s)
		if m == nil {
			return "", fmt.Errorf("template %q: want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}", cut(s))
		}
		s = s[len(m[0]):]
		if syntaxOnly {
			continue
		}
		switch {
		case m[1] == "name":
			b.WriteString(c.Name)
		case m[2] != "":
			v, ok := c.Labels[m[2]]
			if !ok {
				return "", fmt.Errorf("template %s: cluster %s has no label %q", m[0], c.Name, m[2])
			}
			b.WriteString(v)
		default:
			v, ok := c.Claims[m[3]]
			if !ok {
				return "", fmt.Errorf("template %s: cluster %s has no ClusterClaim %q", m[0], c.Name, m[3])
			}
			b.WriteString(v)
		}
	}
}

// cut shortens a template for a message.
func cut(s string) string {
	if i := strings.Index(s, "}}"); i >= 0 && i < 80 {
		return s[:i+2]
	}
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
