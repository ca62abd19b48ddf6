package compliance

import (
	"sort"
	"strconv"
	"strings"
)

func lowerKey(s string) string { return strings.ToLower(s) }

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func boolKeys[V any](m map[string]V) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// lessItem orders items by ID in natural order (AC-2 < AC-6 < AC-6(1) < AC-12),
// items without an ID after those with one, by title.
func lessItem(a, b Item) bool {
	if (a.ID == "") != (b.ID == "") {
		return a.ID != ""
	}
	if a.ID != b.ID {
		return naturalLess(a.ID, b.ID)
	}
	return lowerKey(a.Title) < lowerKey(b.Title)
}

// naturalLess compares strings with runs of digits compared as numbers.
func naturalLess(a, b string) bool {
	for a != "" && b != "" {
		da, db := digitRun(a), digitRun(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na < nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return a[0] < b[0]
		}
		a, b = a[1:], b[1:]
	}
	return len(a) < len(b)
}

func digitRun(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}
