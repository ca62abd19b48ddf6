package compliance

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/compliance/nist"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// fleet is the fixture every renderer is tested on: three clusters, NIST SP
// 800-53 and NIST-CSF policies with policy-collection annotations, one policy
// with none, messages from the replicas, and the coverage of a small baseline
// profile (testdata/baseline-profile.json).
func fleet() *Report {
	in := Input{
		Now: t0,
		Roots: []policyv1.Policy{
			root("policies", "policy-configmap").annotate(sp80053, cm, "CM-2 Baseline Configuration").
				on("east", policyv1.Compliant).on("west", policyv1.NonCompliant).on("edge-1", policyv1.Compliant).obj(),
			root("policies", "policy-limitrange").annotate("NIST SP 800-53", "SC System and Communications Protection", "SC-6 Resource Availability").
				on("east", policyv1.Compliant).on("west", policyv1.Pending).obj(),
			root("policies", "policy-role").annotate("NIST SP 800-53", "AC Access Control", "AC-6 Least Privilege, AC-6(1)").
				on("east", policyv1.NonCompliant).on("west", policyv1.NonCompliant).on("edge-1", "").obj(),
			root("policies", "policy-etcdencryption").annotate("NIST SP 800-53", "SC System and Communications Protection", "SC-28 Protection of Information at Rest").
				on("east", policyv1.Compliant).on("west", policyv1.Compliant).on("edge-1", policyv1.Compliant).obj(),
			root("gitops", "policy-gitops").annotate("NIST-CSF", "PR.PT Protective Technology", "PR.PT-3 Least Functionality").
				on("east", policyv1.Compliant).obj(),
			root("default", "ad-hoc-check").on("edge-1", policyv1.NonCompliant).obj(),
		},
		Replicas: []policyv1.Policy{
			replica("policies", "policy-configmap", "west",
				tmpl{"policy-configmap", policyv1.NonCompliant, []string{"NonCompliant; violation - configmaps [game-config] not found in namespace default"}}),
			replica("policies", "policy-role", "east",
				tmpl{"policy-role", policyv1.NonCompliant, []string{"NonCompliant; violation - roles [deployments-role] not found in namespace default"}}),
			replica("policies", "policy-role", "west",
				tmpl{"policy-role", policyv1.NonCompliant, []string{"NonCompliant; violation - roles [deployments-role] found but not as specified in namespace default", "Compliant; notification - roles [deployments-role] found as specified"}}),
			replica("default", "ad-hoc-check", "edge-1",
				tmpl{"check-ns", policyv1.NonCompliant, []string{"NonCompliant; violation - namespaces [<script>alert(1)</script>] not found"}}),
		},
	}
	r := Build(in, Filter{})
	b, err := nist.Default().LoadBaseline(filepath.Join("testdata", "baseline-profile.json"))
	if err != nil {
		panic(err)
	}
	r.Baseline = Cover(r, b, Filter{})
	return r
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the golden file (go test -update rewrites it):\n--- got\n%s", path, got)
	}
}

func render(t *testing.T, format string, o RenderOptions) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := Render(&buf, format, fleet(), o); err != nil {
		t.Fatalf("Render %s: %v", format, err)
	}
	return buf.Bytes()
}

func TestTableGolden(t *testing.T) {
	golden(t, "table.golden", render(t, FormatTable, RenderOptions{}))
}

func TestClusterTableGolden(t *testing.T) {
	golden(t, "table-by-cluster.golden", render(t, FormatTable, RenderOptions{By: ByCluster}))
}

func TestCSVGolden(t *testing.T) {
	out := render(t, FormatCSV, RenderOptions{})
	golden(t, "report.csv.golden", out)
	recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v", err)
	}
	if strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("header = %v, want %v", recs[0], CSVHeader)
	}
}

func TestJSONGolden(t *testing.T) {
	out := render(t, FormatJSON, RenderOptions{})
	golden(t, "report.json.golden", out)
	var back Report
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("JSON does not read back: %v", err)
	}
	if back.SchemaVersion != SchemaVersion || len(back.Standards) != 3 {
		t.Fatalf("read back %s with %d standards", back.SchemaVersion, len(back.Standards))
	}
	golden(t, "report-by-cluster.json.golden", render(t, FormatJSON, RenderOptions{By: ByCluster}))
}

func TestHTMLGolden(t *testing.T) {
	out := render(t, FormatHTML, RenderOptions{})
	golden(t, "report.html.golden", out)
	page := string(out)
	// Self-contained: no script, no external asset; user text is escaped.
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("page contains a <script> element (a policy message must be escaped, and the page needs no script)")
	}
	if m := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`).FindString(page); m != "" {
		t.Errorf("page refers to an external asset: %s", m)
	}
	for _, want := range []string{
		`<meta name="viewport"`,             // narrow screens
		`<svg width=`,                       // heat map drawn on the server
		`<details id="f-nist-sp-800-53-ac"`, // drill-down per family, open on violation
		"roles [deployments-role] found but not as specified in namespace default",
		`&lt;script&gt;alert(1)&lt;/script&gt;`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
}

func TestRenderRefuses(t *testing.T) {
	var buf bytes.Buffer
	if err := Render(&buf, "yaml", fleet(), RenderOptions{}); err == nil || !strings.Contains(err.Error(), "table, csv, json, html") {
		t.Errorf("format yaml: err = %v, want the accepted formats named", err)
	}
	if err := Render(&buf, FormatTable, fleet(), RenderOptions{By: "policy"}); err == nil || !strings.Contains(err.Error(), "--by") {
		t.Errorf("--by policy: err = %v", err)
	}
	if buf.Len() != 0 {
		t.Errorf("refused render wrote %q", buf.String())
	}
}

func TestBars(t *testing.T) {
	for _, c := range []Counts{{1, 1, 1}, {3, 0, 0}, {0, 2, 5}, {7, 3, 0}} {
		sum := 0
		for _, b := range bars(c) {
			sum += b.W
		}
		if sum != barWidth {
			t.Errorf("bars(%+v) widths sum to %d, want %d", c, sum, barWidth)
		}
	}
	if bars(Counts{}) != nil {
		t.Error("bars of nothing should be empty")
	}
}
