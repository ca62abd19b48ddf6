package web

import (
	"fmt"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"

	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Query parameters of PagePath and APIPath.
const (
	ParamStandard = "standard"
	ParamControl  = "control"
	ParamClusters = "clusters"
	ParamSince    = "since"
)

// Bounds on query parameters.
const (
	// MaxTextParam is the longest standard or control, in bytes.
	MaxTextParam = 128
	// MaxClusters is how many clusters one request may name.
	MaxClusters = 1000
)

var params = []string{ParamStandard, ParamControl, ParamClusters, ParamSince}

// query is what a request asks for.
type query struct {
	filter compliance.Filter
	since  time.Time
}

// parseQuery reads q, with now and the default window, into a query, or says
// which parameter is wrong and why. It is pure.
func parseQuery(q url.Values, now time.Time, window time.Duration) (query, error) {
	out := query{since: now.Add(-window)}
	var unknown []string
	for k, v := range q {
		if !slices.Contains(params, k) {
			unknown = append(unknown, k)
			continue
		}
		if len(v) > 1 {
			return out, fmt.Errorf("query parameter %s is given %d times: give it once", k, len(v))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return out, fmt.Errorf("query parameter %q is not known: the parameters are %s", unknown[0], strings.Join(params, ", "))
	}
	for _, k := range []string{ParamStandard, ParamControl} {
		v := q.Get(k)
		if p := textProblem(v); p != "" {
			return out, fmt.Errorf("query parameter %s: %s", k, p)
		}
	}
	out.filter.Standard, out.filter.Control = q.Get(ParamStandard), q.Get(ParamControl)
	if c := q.Get(ParamClusters); c != "" {
		names := strings.Split(c, ",")
		if len(names) > MaxClusters {
			return out, fmt.Errorf("query parameter %s: %d clusters, more than %d", ParamClusters, len(names), MaxClusters)
		}
		for i, n := range names {
			if n == "" {
				return out, fmt.Errorf("query parameter %s: item %d is empty (comma-separated cluster names)", ParamClusters, i+1)
			}
			if errs := validation.IsDNS1123Label(n); len(errs) > 0 {
				return out, fmt.Errorf("query parameter %s: item %d %q is not a cluster name: %s", ParamClusters, i+1, clip(n), errs[0])
			}
		}
		out.filter.Clusters = names
	}
	if s, ok := q[ParamSince]; ok {
		t, err := history.ParseSince(s[0], now)
		if err != nil {
			return out, fmt.Errorf("query parameter %w", err)
		}
		if t.After(now) {
			return out, fmt.Errorf("query parameter since %q: %s is after now (%s)", clip(s[0]), t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		out.since = t
	}
	return out, nil
}

// textProblem says what is wrong with a standard or control value.
func textProblem(v string) string {
	switch {
	case len(v) > MaxTextParam:
		return fmt.Sprintf("%d bytes, longer than %d", len(v), MaxTextParam)
	case !utf8.ValidString(v):
		return "not UTF-8"
	case strings.ContainsFunc(v, unicode.IsControl):
		return "contains a control character"
	}
	return ""
}

// clip shortens v for a message.
func clip(v string) string {
	if len(v) <= 64 {
		return v
	}
	return v[:64] + "..."
}
