//go:build compare

package compare

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
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

// workloads in the order they run; FLOTILLA_COMPARE picks a subset.
var workloads = []struct {
	name string
	run  func(b *testing.B, upstream string) []row
}{
	{"placement", placementWorkload},
	{"work", workWorkload},
	{"registration", registrationWorkload},
}

func BenchmarkCompare(b *testing.B) {
	log.SetLogger(logr.Discard()) // Flotilla's in-process work agent logs through controller-runtime
	upstream := upstreamBin(b)
	picked := strings.Split(os.Getenv("FLOTILLA_COMPARE"), ",")
	var rows []row
	for range b.N {
		rows = rows[:0]
		for _, w := range workloads {
			if picked[0] != "" && !slices.Contains(picked, w.name) {
				continue
			}
			rows = append(rows, w.run(b, upstream)...)
		}
	}
	printTable(os.Stdout, rows)
}

// upstreamBin is the folder of upstream's binaries: $FLOTILLA_UPSTREAM_BIN, as
// hack/upstream-build.sh prints it.
func upstreamBin(b *testing.B) string {
	dir := os.Getenv("FLOTILLA_UPSTREAM_BIN")
	if dir == "" {
		b.Fatal("FLOTILLA_UPSTREAM_BIN is not set: build upstream with hack/upstream-build.sh (or run make bench-compare) and set it to the folder it prints")
	}
	for _, bin := range []string{"placement", "work", "registration"} {
		if _, err := os.Stat(filepath.Join(dir, bin)); err != nil {
			b.Fatalf("FLOTILLA_UPSTREAM_BIN=%s has no %s binary: %v (rebuild with hack/upstream-build.sh)", dir, bin, err)
		}
	}
	return dir
}

// printTable writes the rows with the ratio upstream/Flotilla (above 1: Flotilla
// uses less, or is faster).
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
