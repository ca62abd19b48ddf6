package chaos

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// Fault is one injected fault and how the fleet got over it.
type Fault struct {
	Kind   string // hub, klusterlet, cluster-apiserver, hub-etcd, addon-agent, partition
	Target string // the component killed or the cluster cut off, e.g. klusterlet-cluster2
	// Restart is the time the supervisor (devenv.Up) took to bring everything
	// back; for a partition, the time until the hub marked the cluster Unknown.
	Restart time.Duration
	// Converge is the time from the kill until the fleet converged again
	// (outage and restart included), from the heal for a partition; zero
	// with Converged false when it did not within the bound.
	Converge  time.Duration
	Converged bool
}

// Report is a whole run, as `make chaos` prints it.
type Report struct {
	Duration   time.Duration
	Clusters   int
	Ops        map[string]int // create, update, delete, rollout, policy-*, addon-* (done) and the same with "-failed"
	Faults     []Fault
	Memory     map[string]Memory // process -> what was seen of its RSS
	Violations []Violation
}

// Memory is what the run saw of one process's resident memory (RSS, bytes):
// its peak over the whole run and over each third of it. A process whose
// peak grows from the first third to the last is the trend to look at (a
// killed process starts again from nothing, so a leak shows only in what
// lives long enough).
type Memory struct {
	Peak   int64
	Thirds [3]int64
}

// Add records a sample taken at elapsed into a run of length d (samples
// before the start count to the first third, after the end to the last).
func (m *Memory) Add(rss int64, elapsed, d time.Duration) {
	m.Peak = max(m.Peak, rss)
	i := 0
	if d > 0 && elapsed > 0 {
		i = min(int(3*elapsed/d), 2)
	}
	m.Thirds[i] = max(m.Thirds[i], rss)
}

// Growth is the last third's peak less the first third's, in bytes.
func (m Memory) Growth() int64 { return m.Thirds[2] - m.Thirds[0] }

// Percentile returns the p-th percentile (0..100) of ds by nearest rank; 0 for none.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	rank := int(p/100*float64(len(s)) + 0.999999)
	if rank < 1 {
		rank = 1
	}
	if rank > len(s) {
		rank = len(s)
	}
	return s[rank-1]
}

// Write prints the report as aligned tables.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "chaos run: %s, %d managed clusters\n\n", r.Duration.Round(time.Second), r.Clusters)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "OPERATION\tDONE\tFAILED (retried later)")
	for _, op := range []string{"create", "update", "delete", "rollout", "policy-create", "policy-update", "policy-delete", "addon-enable", "addon-disable"} {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", op, r.Ops[op], r.Ops[op+"-failed"])
	}
	fmt.Fprintf(tw, "new hub certificate\t%d\t-\n", r.Ops["rotation"])
	tw.Flush()
	fmt.Fprintln(w)

	byKind := map[string][]Fault{}
	for _, f := range r.Faults {
		byKind[f.Kind] = append(byKind[f.Kind], f)
	}
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FAULT\tINJECTED\tRESTART p50\tCONVERGED p50\tp99\tNOT CONVERGED")
	var all []time.Duration
	kinds := slices.Sorted(maps.Keys(byKind))
	for _, k := range kinds {
		var conv, restart []time.Duration
		failed := 0
		for _, f := range byKind[k] {
			restart = append(restart, f.Restart)
			if f.Converged {
				conv = append(conv, f.Converge)
			} else {
				failed++
			}
		}
		all = append(all, conv...)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%d\n", k, len(byKind[k]), ms(Percentile(restart, 50)),
			ms(Percentile(conv, 50)), ms(Percentile(conv, 99)), failed)
	}
	fmt.Fprintf(tw, "all\t%d\t\t%s\t%s\t\n", len(r.Faults), ms(Percentile(all, 50)), ms(Percentile(all, 99)))
	tw.Flush()
	fmt.Fprintln(w, "RESTART: from the kill until the supervisor has everything running (partition: from the cut until the hub")
	fmt.Fprintln(w, "marks the cluster Unknown and tainted). CONVERGED: from the kill (partition: the heal) until every invariant holds.")
	fmt.Fprintln(w)

	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PROCESS\tPEAK RSS\tFIRST THIRD\tLAST THIRD\tTREND")
	names := slices.Collect(maps.Keys(r.Memory))
	sort.Strings(names)
	for _, n := range names {
		m := r.Memory[n]
		fmt.Fprintf(tw, "%s\t%d MiB\t%d MiB\t%d MiB\t%+d MiB\n", n, m.Peak>>20, m.Thirds[0]>>20, m.Thirds[2]>>20, m.Growth()>>20)
	}
	tw.Flush()
	fmt.Fprintln(w, "RSS peaks over the run and over its first and last thirds; TREND: last third less first.")
	fmt.Fprintln(w)

	fmt.Fprintf(w, "invariant violations: %d\n", len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintln(w, "  "+strings.ReplaceAll(v.String(), "\n", " "))
	}
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	if d < time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}
