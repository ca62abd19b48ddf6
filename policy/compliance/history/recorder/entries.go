package recorder

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"
	"unicode/utf8"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Bounds on what one replica's status may add to the history. A replica's
// status is written by its cluster's agent, so these hold what a compromised
// cluster can put in the hub's store.
const (
	// MaxEntries is how many history entries of a template are read: the
	// newest, as many as an agent keeps (OCM's limit of ten).
	MaxEntries = 10
	// MaxMessageBytes is the longest message kept; a longer one is cut at a
	// character boundary and ends with "...".
	MaxMessageBytes = 4096
	// MaxClockSkew is how far ahead of the hub's clock an entry may be; a
	// later one is not recorded (it would stand as the series' state for good,
	// past any retention).
	MaxClockSkew = 5 * time.Minute
	// MaxForwardedAge is how long before its hub Event was created a
	// forwarded compliance event may say it happened: the managed cluster
	// keeps its events an hour by default (--event-ttl), and this leaves
	// room for a longer TTL and an agent that was down.
	MaxForwardedAge = 24 * time.Hour
)

// entries is the history p's status holds that the recorder keeps: details
// of templates p's spec carries (by metadata.name, or template-<i> for one
// without a name, as the framework agent reports them), once each; per
// template the MaxEntries newest entries not after now+MaxClockSkew; messages
// cut to MaxMessageBytes. It is pure.
func entries(p *policyv1.Policy, now time.Time) []history.Event {
	known := templates(p)
	latest := now.Add(MaxClockSkew)
	seen := map[string]bool{}
	kept := *p.DeepCopy()
	kept.Status.Details = nil
	for _, d := range p.Status.Details {
		if d == nil || !known[d.TemplateMeta.Name] || seen[d.TemplateMeta.Name] {
			continue
		}
		seen[d.TemplateMeta.Name] = true
		c := d.DeepCopy()
		c.History = c.History[:0]
		for _, h := range d.History {
			if h.LastTimestamp.Time.After(latest) {
				continue
			}
			h.Message = clip(h.Message)
			c.History = append(c.History, h)
		}
		// Newest first, as the agent lists them; among entries of one
		// second, the list's order stands where their names do not tell.
		sort.SliceStable(c.History, func(i, j int) bool {
			return history.EntryTime(c.History[j]).Before(history.EntryTime(c.History[i]))
		})
		if len(c.History) > MaxEntries {
			c.History = c.History[:MaxEntries]
		}
		kept.Status.Details = append(kept.Status.Details, c)
	}
	return history.FromReplicas([]policyv1.Policy{kept})
}

// templates are the names of the templates p's spec carries, as the framework
// agent reports them: metadata.name, or template-<i> for one without a name.
func templates(p *policyv1.Policy) map[string]bool {
	known := map[string]bool{}
	for i, t := range p.Spec.PolicyTemplates {
		if t == nil {
			continue
		}
		var meta struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(t.ObjectDefinition.Raw, &meta); err != nil || meta.Metadata.Name == "" {
			known[fmt.Sprintf("template-%d", i)] = true
			continue
		}
		known[meta.Metadata.Name] = true
	}
	return known
}

func clip(m string) string {
	if len(m) <= MaxMessageBytes {
		return m
	}
	cut := MaxMessageBytes - len("...")
	for cut > 0 && !utf8.RuneStart(m[cut]) {
		cut--
	}
	return strings.ToValidUTF8(m[:cut], "") + "..."
}
