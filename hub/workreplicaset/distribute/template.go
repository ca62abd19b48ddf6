package distribute

import (
	"fmt"

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

const templateOpen = "{{"

// parseTemplate reads the template at the start of s ("{{" already there):
// {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }},
// with optional spaces inside the braces and KEY, NAME of letters, digits,
// ".", "_", "/", "-". It returns what the template asks for ("name",
// "labels" or "claims"), the key, and its length; ok false when s does not
// start with a well-formed template.
func parseTemplate(s string) (what, key string, n int, ok bool) {
	i := len(templateOpen)
	for i < len(s) && s[i] == ' ' {
		i++
	}
	rest := s[i:]
	if !strings.HasPrefix(rest, "cluster.") {
		return "", "", 0, false
	}
	i += len("cluster.")
	rest = s[i:]
	switch {
	case strings.HasPrefix(rest, "name"):
		what = "name"
		i += len("name")
	case strings.HasPrefix(rest, "labels["), strings.HasPrefix(rest, "claims["):
		what = rest[:6]
		i += len("labels[")
		start := i
		for i < len(s) && isKeyByte(s[i]) {
			i++
		}
		if i == start || i >= len(s) || s[i] != ']' {
			return "", "", 0, false
		}
		key = s[start:i]
		i++
	default:
		return "", "", 0, false
	}
	for i < len(s) && s[i] == ' ' {
		i++
	}
	if !strings.HasPrefix(s[i:], "}}") {
		return "", "", 0, false
	}
	return what, key, i + 2, true
}

func isKeyByte(b byte) bool {
	return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' || b >= '0' && b <= '9' || b == '.' || b == '_' || b == '/' || b == '-'
}

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
		what, key, n, ok := parseTemplate(s)
		if !ok {
			return "", fmt.Errorf("template %q: want {{ cluster.name }}, {{ cluster.labels[KEY] }} or {{ cluster.claims[NAME] }}", cut(s))
		}
		tmpl := s[:n]
		s = s[n:]
		if syntaxOnly {
			continue
		}
		switch what {
		case "name":
			b.WriteString(c.Name)
		case "labels":
			v, ok := c.Labels[key]
			if !ok {
				return "", fmt.Errorf("template %s: cluster %s has no label %q", tmpl, c.Name, key)
			}
			b.WriteString(v)
		default:
			v, ok := c.Claims[key]
			if !ok {
				return "", fmt.Errorf("template %s: cluster %s has no ClusterClaim %q", tmpl, c.Name, key)
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
