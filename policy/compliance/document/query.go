package document

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
	"flotilla.dev/flotilla/policy/compliance/nist"
)

// Query parameters of a report (ParseQuery) and of a history (ParseHistoryQuery).
const (
	ParamStandard = "standard"
	ParamControl  = "control"
	ParamClusters = "clusters"
	ParamSince    = "since"
	ParamBaseline = "baseline"
	ParamCluster  = "cluster"
	ParamPolicy   = "policy"
)

// Bounds on query parameters.
const (
	// MaxTextParam is the longest standard or control, in bytes.
	MaxTextParam = 128
	// MaxClusters is how many clusters one request may name.
	MaxClusters = 1000
)

var (
	reportParams  = []string{ParamStandard, ParamControl, ParamClusters, ParamSince, ParamBaseline}
	historyParams = []string{ParamSince, ParamCluster, ParamPolicy, ParamControl}
)

// Options say what a report document holds. They are read from query
// parameters (ParseQuery), which the CLI's flags fill too, so a flag and a
// parameter are checked by the same code.
type Options struct {
	// Filter narrows the report.
	Filter compliance.Filter
	// Baseline adds the coverage of this baseline. Default nil: none.
	Baseline *nist.Baseline
	// History adds the history of the report's policies from Since on.
	History bool
	Since   time.Time
}

// HistoryOptions say what a history document holds (ParseHistoryQuery).
type HistoryOptions struct {
	// Since starts the window.
	Since time.Time
	// Cluster keeps one cluster; alone (no Policy) it also asks when the
	// cluster last became NonCompliant in its whole recorded history.
	Cluster string
	// Policy keeps one root policy, "namespace/name".
	Policy string
	// Control keeps the policies mapped to this control (AC-6) or family
	// (AC) and adds the control's counts over time.
	Control string
}

// ParseQuery reads a report's query parameters: standard, control, clusters
// (comma-separated), since (30d, 2w, 12h or a date) and baseline (low,
// moderate, high, privacy). Without since, the history covers window back from
// now (window 0: no history). It says which parameter is wrong and why. It is
// pure.
func ParseQuery(q url.Values, now time.Time, window time.Duration) (Options, error) {
	var out Options
	if window > 0 {
		out.History, out.Since = true, now.Add(-window)
	}
	if err := known(q, reportParams); err != nil {
		return out, err
	}
	for _, k := range []string{ParamStandard, ParamControl} {
		if p := textProblem(q.Get(k)); p != "" {
			return out, fmt.Errorf("query parameter %s: %s", k, p)
		}
	}
	out.Filter.Standard, out.Filter.Control = q.Get(ParamStandard), q.Get(ParamControl)
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
		out.Filter.Clusters = names
	}
	if s, ok := q[ParamSince]; ok {
		t, err := parseSince(s[0], now)
		if err != nil {
			return out, err
		}
		out.History, out.Since = true, t
	}
	if s, ok := q[ParamBaseline]; ok {
		b, found := nist.Default().Baseline(s[0])
		if !found {
			return out, fmt.Errorf("query parameter %s %q: use %s (a profile file is applied by the client)", ParamBaseline, clip(s[0]), strings.Join(nist.Names, ", "))
		}
		out.Baseline = b
	}
	return out, nil
}

// ParseHistoryQuery reads a history's query parameters: since (default:
// window back from now), cluster, policy (namespace/name) and control.
func ParseHistoryQuery(q url.Values, now time.Time, window time.Duration) (HistoryOptions, error) {
	out := HistoryOptions{Since: now.Add(-window)}
	if err := known(q, historyParams); err != nil {
		return out, err
	}
	if p := textProblem(q.Get(ParamControl)); p != "" {
		return out, fmt.Errorf("query parameter %s: %s", ParamControl, p)
	}
	out.Control = q.Get(ParamControl)
	if c := q.Get(ParamCluster); c != "" {
		if errs := validation.IsDNS1123Label(c); len(errs) > 0 {
			return out, fmt.Errorf("query parameter %s %q is not a cluster name: %s", ParamCluster, clip(c), errs[0])
		}
		out.Cluster = c
	}
	if p := q.Get(ParamPolicy); p != "" {
		ns, name, ok := strings.Cut(p, "/")
		if !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1123Subdomain(name)) > 0 {
			return out, fmt.Errorf("query parameter %s %q is not a root policy: give namespace/name", ParamPolicy, clip(p))
		}
		out.Policy = p
	}
	if s, ok := q[ParamSince]; ok {
		t, err := parseSince(s[0], now)
		if err != nil {
			return out, err
		}
		out.Since = t
	}
	return out, nil
}

// known refuses unknown and repeated parameters.
func known(q url.Values, params []string) error {
	var unknown []string
	for k, v := range q {
		if !slices.Contains(params, k) {
			unknown = append(unknown, k)
			continue
		}
		if len(v) > 1 {
			return fmt.Errorf("query parameter %s is given %d times: give it once", k, len(v))
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return fmt.Errorf("query parameter %q is not known: the parameters are %s", clip(unknown[0]), strings.Join(params, ", "))
	}
	return nil
}

// MaxServedWindow is how far back the hub's API and live page read the
// history: a window reaching further reads (and holds in memory) more than a
// year of every series for anyone who may ask, which any authenticated user
// may. The CLI offline (--compliance-db) reads as far back as asked.
const MaxServedWindow = 400 * 24 * time.Hour

// CheckServedWindow refuses a window that starts further back than
// MaxServedWindow, naming the parameter.
func CheckServedWindow(since, now time.Time) error {
	if !since.Before(now.Add(-MaxServedWindow)) {
		return nil
	}
	return fmt.Errorf("query parameter since: %s is more than 400 days back: the hub serves at most 400 days of history (read older history offline: flotilla compliance history --compliance-db)", since.UTC().Format(time.RFC3339))
}

func parseSince(s string, now time.Time) (time.Time, error) {
	t, err := history.ParseSince(s, now)
	if err != nil {
		return t, fmt.Errorf("query parameter %w", err)
	}
	if t.After(now) {
		return t, fmt.Errorf("query parameter since %q: %s is after now (%s)", clip(s), t.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return t, nil
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
