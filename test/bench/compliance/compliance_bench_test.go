// Package compliance benchmarks the compliance report with its history: 500
// root policies x 1,000 clusters (500,000 policy x cluster results) mapped to
// 50 NIST SP 800-53 controls in 10 families, with a year of transitions in the
// history database. Results: docs/benchmarks.md.
//
//	go test -run '^$' -bench . -benchtime 1x ./test/bench/compliance/
//	# -bench ReportWithHistory/sqlite or /postgres for one database
//	# FLOTILLA_BENCH_COMPLIANCE_CLUSTERS=100 for a smaller fleet
//
// The history: every policy x cluster series starts Compliant a year ago; one
// in ten flaps, NonCompliant and back about once a month (24 events a year).
// The report is --since 30d: the report, what changed, remediations and the
// trend lines, as `flotilla compliance report --since 30d` and the live page
// compute them.
package compliance

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/pgtest"
	"flotilla.dev/flotilla/policy/compliance"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

const (
	policies = 500
	families = 10
	controls = 5 // per family
	day      = 24 * time.Hour
)

var familyIDs = []string{"AC", "AU", "CA", "CM", "IA", "IR", "SC", "SI", "SR", "RA"}

func clusters() int {
	if v, err := strconv.Atoi(os.Getenv("FLOTILLA_BENCH_COMPLIANCE_CLUSTERS")); err == nil && v > 0 {
		return v
	}
	return 1000
}

// fleet builds the roots (status per cluster = the last state of its series)
// and the year of events.
func fleet(now time.Time, nClusters int, record func([]history.Event) error) (compliance.Input, int, error) {
	rng := rand.New(rand.NewPCG(1, 2))
	start := now.Add(-365 * day)
	in := compliance.Input{Now: now}
	total := 0
	batch := make([]history.Event, 0, 50000)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		total += len(batch)
		err := record(batch)
		batch = batch[:0]
		return err
	}
	for p := 0; p < policies; p++ {
		fam := familyIDs[p%families]
		ctl := fmt.Sprintf("%s-%d", fam, 1+(p/families)%controls)
		root := policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Namespace: "policies", Name: fmt.Sprintf("policy-%03d", p), Annotations: map[string]string{
			policyv1.StandardsAnnotation:  "NIST SP 800-53",
			policyv1.CategoriesAnnotation: fam + " Family " + fam,
			policyv1.ControlsAnnotation:   ctl + " Control " + ctl,
		}}}
		name := root.Namespace + "/" + root.Name
		for c := 0; c < nClusters; c++ {
			cluster := fmt.Sprintf("cluster-%04d", c)
			state := compliance.Compliant
			ev := func(s compliance.State, at time.Time) {
				batch = append(batch, history.Event{Policy: name, Template: "check", Cluster: cluster, State: s, Message: string(s) + "; violation - synthetic", Time: at})
				state = s
			}
			ev(compliance.Compliant, start)
			if rng.IntN(10) == 0 { // flapping: NonCompliant and back about monthly
				for m := 0; m < 12; m++ {
					broke := start.Add(time.Duration(m)*30*day + time.Duration(rng.Int64N(int64(20*day))))
					ev(compliance.NonCompliant, broke)
					fixed := broke.Add(time.Duration(1+rng.Int64N(int64(9*day))) + time.Hour)
					if fixed.Before(now) && (m < 11 || rng.IntN(2) == 0) {
						ev(compliance.Compliant, fixed)
					}
				}
			}
			ps := policyv1.Compliant
			if state == compliance.NonCompliant {
				ps = policyv1.NonCompliant
			}
			root.Status.Status = append(root.Status.Status, &policyv1.CompliancePerClusterStatus{ClusterName: cluster, ClusterNamespace: cluster, ComplianceState: ps})
			if len(batch) >= 45000 {
				if err := flush(); err != nil {
					return in, total, err
				}
			}
		}
		in.Roots = append(in.Roots, root)
	}
	return in, total, flush()
}

// report is what the CLI and the live page compute: the report, the summary
// of the window and the trend, rendered as HTML.
func report(ctx context.Context, s history.Store, in compliance.Input, since time.Time) (*document.Document, int, error) {
	r := compliance.Build(in, compliance.Filter{})
	sum, err := history.SummarizeWithTrend(ctx, s, history.Query{Since: since}, nil, r, in, 0)
	if err != nil {
		return nil, 0, err
	}
	doc := &document.Document{Report: r, History: sum}
	var out strings.Builder
	if err := document.WriteHTML(&out, doc); err != nil {
		return nil, 0, err
	}
	return doc, out.Len(), nil
}

// BenchmarkReportWithHistory runs on SQLite (a file in a temporary folder)
// and on PostgreSQL (Debian's server started by pgtest, over its unix socket).
func BenchmarkReportWithHistory(b *testing.B) {
	b.Run("sqlite", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "compliance.db")
		_, statErr := os.Stat(os.Getenv("FLOTILLA_BENCH_COMPLIANCE_DB"))
		if p := os.Getenv("FLOTILLA_BENCH_COMPLIANCE_DB"); p != "" {
			path = p // kept from an earlier run when it exists (for profiling queries)
		}
		benchReport(b, "sqlite", func(ctx context.Context) (history.Store, error) { return history.OpenSQLite(ctx, path) },
			func(ctx context.Context, s history.Store, batch []history.Event) error {
				if statErr == nil || batch == nil {
					return nil
				}
				_, err := s.Record(ctx, batch...)
				return err
			})
	})
	b.Run("postgres", func(b *testing.B) {
		url := pgtest.Start(b).NewDatabase(b)
		chain := &bulkChain{}
		benchReport(b, "postgres", func(ctx context.Context) (history.Store, error) { return history.OpenPostgres(ctx, url) },
			func(ctx context.Context, _ history.Store, batch []history.Event) error {
				return copyEvents(ctx, url, chain, batch)
			})
	})
}

// copyEvents loads a batch with COPY (the setup only: a year of events
// through Record would take minutes), chained as Record chains them
// (history.EventHash, FoldHead), and at the end (a nil batch) writes the
// store's head and analyses the tables as autovacuum would.
func copyEvents(ctx context.Context, url string, chain *bulkChain, batch []history.Event) error {
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if batch == nil {
		if _, err := conn.Exec(ctx, "UPDATE compliance_writes SET seq = $1, head = $2 WHERE id = 1", chain.seq, chain.head); err != nil {
			return err
		}
		_, err := conn.Exec(ctx, "ANALYZE")
		return err
	}
	batch = slices.Clone(batch)
	slices.SortStableFunc(batch, func(a, b history.Event) int { return a.Time.Compare(b.Time) })
	rows := make([][]any, len(batch))
	heads := map[history.Key]string{}
	var order []history.Key
	for i, e := range batch {
		e.Time = time.UnixMicro(e.Time.UTC().UnixMicro()).UTC()
		chain.seq++
		e.Seq = chain.seq
		k := e.Key()
		prev, seen := heads[k]
		if !seen {
			order = append(order, k)
		}
		hash := history.EventHash(prev, e)
		heads[k], chain.head = hash, history.FoldHead(chain.head, e.Seq, hash)
		rows[i] = []any{e.Policy, e.Template, e.Cluster, string(e.State), e.Message, e.Time.UnixMicro(), e.Seq, prev, hash}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"compliance_events"}, []string{"policy", "template", "cluster", "state", "message", "time_us", "seq", "prev", "hash"}, pgx.CopyFromRows(rows)); err != nil {
		return err
	}
	// A series is in one batch only (fleet flushes between series).
	keys := make([][]any, len(order))
	for i, k := range order {
		keys[i] = []any{k.Policy, k.Cluster, k.Template, heads[k], ""}
	}
	if _, err := conn.CopyFrom(ctx, pgx.Identifier{"compliance_series"}, []string{"policy", "cluster", "template", "head", "anchor"}, pgx.CopyFromRows(keys)); err != nil {
		return err
	}
	return nil
}

// bulkChain is the chain as copyEvents has written it so far.
type bulkChain struct {
	seq  int64
	head string
}

func benchReport(b *testing.B, name string, open func(context.Context) (history.Store, error), record func(context.Context, history.Store, []history.Event) error) {
	ctx := context.Background()
	now := time.Now().UTC()
	nClusters := clusters()
	s, err := open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	genStart := time.Now()
	in, events, err := fleet(now, nClusters, func(batch []history.Event) error { return record(ctx, s, batch) })
	if err != nil {
		b.Fatal(err)
	}
	if err := record(ctx, s, nil); err != nil { // the end of the load
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: %d policies x %d clusters, %d events in a year recorded in %s", name, policies, nClusters, events, time.Since(genStart).Round(time.Second))
	// The whole store's chain, checked as `flotilla compliance verify` does.
	if vs, err := open(ctx); err != nil {
		b.Fatal(err)
	} else {
		t0, c0 := time.Now(), cpuTime()
		v, err := vs.Verify(ctx)
		if err != nil || !v.OK() {
			b.Fatalf("verify after the load: %+v (%v), %v", v, v.Broken, err)
		}
		b.Logf("%s: verify: %d events in %d series whole in %s (process CPU %s)", name, v.Events, v.Series, time.Since(t0).Round(time.Millisecond), (cpuTime() - c0).Round(time.Millisecond))
		vs.Close()
	}
	since := now.Add(-30 * day)
	rng := rand.New(rand.NewPCG(3, 4))

	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		// Cold: open the database (schema check) and compute.
		t0 := time.Now()
		s, err := open(ctx)
		if err != nil {
			b.Fatal(err)
		}
		doc, size, err := report(ctx, s, in, since)
		if err != nil {
			b.Fatal(err)
		}
		cold := time.Since(t0)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		b.Logf("%s: cold %s; %d changes, %d remediations in 30 days; HTML %d KiB; allocated %d MiB",
			name, cold.Round(time.Millisecond), len(doc.History.Changes), len(doc.History.Remediations), size>>10, (after.TotalAlloc-before.TotalAlloc)>>20)
		// Warm: the database open, as in the hub: a minute later each time,
		// with a minute of transitions recorded through the store (as the
		// hub's recorder does) and the roots' status following them.
		stop := startProfile(b)
		var warm, warmCPU []time.Duration
		var warmAlloc uint64
		for run := 1; run <= warmRuns; run++ {
			in.Now = now.Add(time.Duration(run) * time.Minute)
			if err := flapMinute(ctx, s, &in, rng, in.Now); err != nil {
				b.Fatal(err)
			}
			runtime.ReadMemStats(&before)
			t1, c1 := time.Now(), cpuTime()
			doc, size, err := report(ctx, s, in, in.Now.Add(-30*day))
			if err != nil {
				b.Fatal(err)
			}
			warm = append(warm, time.Since(t1))
			warmCPU = append(warmCPU, cpuTime()-c1)
			runtime.ReadMemStats(&after)
			warmAlloc = max(warmAlloc, after.TotalAlloc-before.TotalAlloc)
			b.Logf("%s: warm %s, CPU %s (incremental %v); %d changes, %d remediations; HTML %d KiB; allocated %d MiB",
				name, warm[len(warm)-1].Round(time.Millisecond), warmCPU[len(warmCPU)-1].Round(time.Millisecond), doc.History.Incremental, len(doc.History.Changes), len(doc.History.Remediations), size>>10, (after.TotalAlloc-before.TotalAlloc)>>20)
		}
		stop()
		s.Close()
		slices.Sort(warm)
		slices.Sort(warmCPU)
		b.ReportMetric(cold.Seconds(), "cold-s")
		b.ReportMetric(warm[len(warm)/2].Seconds(), "warm-median-s")
		b.ReportMetric(warm[len(warm)-1].Seconds(), "warm-max-s")
		b.ReportMetric(warmCPU[len(warmCPU)/2].Seconds(), "warm-cpu-median-s")
		b.ReportMetric(float64(warmAlloc)/(1<<20), "warm-alloc-MiB")
		b.ReportMetric(float64(peakRSS())/(1<<10), "peak-rss-MiB")
		b.Logf("%s: cold %s, warm %s (median of %d), %s .. %s, process CPU %s (median); warm allocation up to %d MiB; peak RSS %d MiB; load average %s",
			name, cold.Round(time.Millisecond), warm[len(warm)/2].Round(time.Millisecond), len(warm), warm[0].Round(time.Millisecond), warm[len(warm)-1].Round(time.Millisecond), warmCPU[len(warmCPU)/2].Round(time.Millisecond),
			warmAlloc>>20, peakRSS()>>10, loadAverage())
	}
}

// warmRuns is the number of warm reports per benchmark iteration.
const warmRuns = 7

// flapMinute records a minute of transitions (100 series flip, each on a
// policy x cluster chosen at random) at the given time and updates the
// roots' status to match.
func flapMinute(ctx context.Context, s history.Store, in *compliance.Input, rng *rand.Rand, at time.Time) error {
	var batch []history.Event
	for i := 0; i < 100; i++ {
		root := &in.Roots[rng.IntN(len(in.Roots))]
		st := root.Status.Status[rng.IntN(len(root.Status.Status))]
		state, ps := compliance.NonCompliant, policyv1.NonCompliant
		if st.ComplianceState == policyv1.NonCompliant {
			state, ps = compliance.Compliant, policyv1.Compliant
		}
		st.ComplianceState = ps
		when := at.Add(-time.Duration(rng.IntN(60)) * time.Second)
		batch = append(batch, history.Event{Policy: root.Namespace + "/" + root.Name, Template: "check", Cluster: st.ClusterName,
			State: state, Message: string(state) + "; violation - synthetic", Time: when})
	}
	_, err := s.Record(ctx, batch...)
	return err
}

// startProfile writes a CPU profile of the warm reports to
// $FLOTILLA_BENCH_COMPLIANCE_PROFILE when set; the returned func stops it.
func startProfile(b *testing.B) func() {
	path := os.Getenv("FLOTILLA_BENCH_COMPLIANCE_PROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// cpuTime is the CPU time (user and system) the process used so far: the
// report's own work and its garbage collection, not the database server's.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loadAverage is the machine's 1-minute load average (/proc/loadavg).
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Fields(string(data))[0]
}

// peakRSS is the process's peak resident set in KiB (VmHWM).
func peakRSS() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
