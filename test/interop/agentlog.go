package interop

import (
	"strings"
	"time"
)

// grantRace splits failure lines of an upstream agent's klog output into
// those the hub's grant explains and the rest. clusteradm accept approves the
// agent's CSR before it sets hubAcceptsClient, so the agent can hold a
// certificate, and list, before the hub has written the cluster's RBAC;
// upstream's own hub has the same order. A line is excused when it is a 403
// (forbidden) logged no later than grace after the grant (the cluster's
// registration RoleBinding's creationTimestamp, whole seconds). Anything
// else, or any failure after that, stays: an informer that does not recover
// keeps logging.
func grantRace(lines []string, granted time.Time, grace time.Duration, year int, loc *time.Location) (excused, bad []string) {
	for _, l := range lines {
		at, ok := klogTime(l, year, loc)
		if ok && strings.Contains(l, "forbidden") && !at.After(granted.Add(grace)) {
			excused = append(excused, l)
			continue
		}
		bad = append(bad, l)
	}
	return excused, bad
}

// klogTime reads the time of a klog line ("E1202 19:35:04.206943 ..."),
// which has no year and is in the writer's local time.
func klogTime(line string, year int, loc *time.Location) (time.Time, bool) {
	if len(line) < 21 || !strings.ContainsRune("IWEF", rune(line[0])) {
		return time.Time{}, false
	}
	at, err := time.ParseInLocation("0102 15:04:05.000000", line[1:21], loc)
	if err != nil {
		return time.Time{}, false
	}
	return at.AddDate(year, 0, 0), true
}
