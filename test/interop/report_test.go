//go:build interop && linux

package interop

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// report collects the suite's checks and prints them as a table.
type report struct {
	mu   sync.Mutex
	rows []row
}

type row struct {
	name   string
	err    error
	detail string
	took   time.Duration
}

// check runs f as the named check, records pass or fail and fails t on failure.
// f returns a detail for the table (may be empty) or an error.
func (r *report) check(t *testing.T, name string, f func() (string, error)) bool {
	t.Helper()
	start := time.Now()
	detail, err := f()
	r.mu.Lock()
	r.rows = append(r.rows, row{name: name, err: err, detail: detail, took: time.Since(start).Round(time.Second)})
	r.mu.Unlock()
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return false
	}
	t.Logf("PASS %s %s", name, detail)
	return true
}

// notRun records the checks that could not run because an earlier one failed.
func (r *report) notRun(t *testing.T, because string, names ...string) {
	t.Helper()
	for _, n := range names {
		r.check(t, n, func() (string, error) { return "", fmt.Errorf("not run: %s", because) })
	}
}

func (r *report) print(w io.Writer, header string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	width := len("CHECK")
	for _, row := range r.rows {
		width = max(width, len(row.name))
	}
	fmt.Fprintln(w, header)
	fmt.Fprintf(w, "%-*s  %-6s  %6s  %s\n", width, "CHECK", "RESULT", "TIME", "DETAIL")
	pass := 0
	for _, row := range r.rows {
		res, detail := "pass", row.detail
		if row.err != nil {
			res, detail = "FAIL", row.err.Error()
		} else {
			pass++
		}
		detail = strings.ReplaceAll(detail, "\n", " ")
		if len(detail) > 160 {
			detail = detail[:157] + "..."
		}
		fmt.Fprintf(w, "%-*s  %-6s  %6s  %s\n", width, row.name, res, row.took, detail)
	}
	fmt.Fprintf(w, "%d of %d checks passed\n", pass, len(r.rows))
}
