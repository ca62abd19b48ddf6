package history

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseSince reads a --since value: a duration back from now ("30d", "2w",
// "12h", "90m", any Go duration) or a date ("2026-11-01", RFC 3339).
func ParseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, fmt.Errorf("since: empty: give a duration (30d, 2w, 12h) or a date (2026-11-01)")
	}
	for _, unit := range []struct {
		suffix string
		d      time.Duration
	}{{"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}} {
		if n, ok := strings.CutSuffix(s, unit.suffix); ok {
			if v, err := strconv.Atoi(n); err == nil && v >= 0 {
				if most := int(math.MaxInt64 / int64(unit.d)); v > most {
					return time.Time{}, fmt.Errorf("since %q: more than %d%s back, the longest span a time can hold", s, most, unit.suffix)
				}
				return now.Add(-time.Duration(v) * unit.d), nil
			}
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("since %q: not a duration (30d, 2w, 12h) or a date (2026-11-01, RFC 3339)", s)
}
