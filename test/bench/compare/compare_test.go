//go:build compare

package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// row is one line of the comparison table: the same figure measured on both.
type row struct {
	workload, metric string
	flotilla         float64 // every figure is a time or an amount used: lower is better
	upstream         float64
}

// workloads in the order they run; FLOTILLA_COMPARE picks a subset. An
// optIn workload (long, or needing other binaries) runs only when
// FLOTILLA_COMPARE names it. A workload that is notOCM compares with another
// project (its own binaries) and needs no upstream OCM binaries.
var workloads = []struct {
	name   string
	optIn  bool
	notOCM bool
	run    func(b *testing.B, upstream string) []row
}{
	{"placement", false, false, func(b *testing.B, up string) []row { return placementWorkload(b, up, 1000) }},
	{"placement10k", true, false, func(b *testing.B, up string) []row { return placementWorkload(b, up, 10000) }},
	{"work", false, false, workWorkload},
	{"registration", false, false, registrationWorkload},
	{"policy", false, false, policyWorkload},
	{"search", true, true, searchWorkload},
}

func BenchmarkCompare(b *testing.B) {
	log.SetLogger(logr.Discard()) // Flotilla's in-process work agent logs through controller-runtime
	picked := strings.Split(os.Getenv("FLOTILLA_COMPARE"), ",")
	upstream := ""
	for _, w := range workloads {
		if isPicked(picked, w.name, w.optIn) && !w.notOCM {
			upstream = upstreamBin(b)
			break
		}
	}
	if q, _ := sameLimits(b); q > 0 {
		fmt.Printf("both sides' clients limited to %g QPS, burst %d (FLOTILLA_COMPARE_QPS)\n", q, 2*int(q))
	}
	var rows []row
	for range b.N {
		rows = rows[:0]
		for _, w := range workloads {
			if !isPicked(picked, w.name, w.optIn) {
				continue
			}
			rows = append(rows, w.run(b, upstream)...)
		}
	}
	printTable(os.Stdout, rows)
}

// isPicked: FLOTILLA_COMPARE (split at commas) names the workload, or is
// empty and the workload is not optIn.
func isPicked(picked []string, name string, optIn bool) bool {
	if picked[0] == "" {
		return !optIn
	}
	return slices.Contains(picked, name)
}

// upstreamBin is the folder of upstream's binaries: $FLOTILLA_UPSTREAM_BIN, as
// `make upstream` checks it holds them.
func upstreamBin(b *testing.B) string {
	dir := os.Getenv("FLOTILLA_UPSTREAM_BIN")
	if dir == "" {
		b.Fatal("FLOTILLA_UPSTREAM_BIN is not set: build upstream OCM from its public source into .upstream/bin and run make bench-compare, or set it to a folder holding the binaries")
	}
	for _, bin := range []string{"placement", "work", "registration", "config-policy-controller"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			b.Fatalf("FLOTILLA_UPSTREAM_BIN=%s has no %s binary: %v (build it from upstream's source, docs/interop.md)", dir, bin, err)
		}
	}
	return dir
}

// sameLimits is FLOTILLA_COMPARE_QPS: when set, every controller and agent on
// both sides gets a client limited to that many queries per second with twice
// as much burst (Flotilla's and upstream's defaults differ: hub 100/200 vs
// 50/100, policy engine 200/400 vs 30/45). Zero: each side's defaults.
func sameLimits(b *testing.B) (qps float32, burst int) {
	v := os.Getenv("FLOTILLA_COMPARE_QPS")
	if v == "" {
		return 0, 0
	}
	q, err := strconv.ParseFloat(v, 32)
	if err != nil || q <= 0 {
		b.Fatalf("FLOTILLA_COMPARE_QPS=%q: want a positive number of queries per second", v)
	}
	return float32(q), 2 * int(q)
}

// limitArgs are the flags giving a process the same client limits (flag names
// as both `flotilla hub` and upstream's controllers spell them), or none.
func limitArgs(b *testing.B, qpsFlag, burstFlag string) []string {
	q, burst := sameLimits(b)
	if q == 0 {
		return nil
	}
	return []string{qpsFlag, fmt.Sprint(q), burstFlag, strconv.Itoa(burst)}
}

// printTable writes the rows with the ratio upstream/Flotilla (above 1: Flotilla
// uses less, or is faster). In the search workload's rows "upstream" is
// Clusterpedia.
func printTable(out *os.File, rows []row) {
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "workload\tmetric\tflotilla\tupstream\tupstream/flotilla\t")
	for _, r := range rows {
		ratio := "-"
		if r.flotilla > 0 {
			ratio = fmt.Sprintf("%.2fx", r.upstream/r.flotilla)
		}
		fmt.Fprintf(w, "%s\t%s\t%.1f\t%.1f\t%s\t\n", r.workload, r.metric, r.flotilla, r.upstream, ratio)
	}
	w.Flush()
}
