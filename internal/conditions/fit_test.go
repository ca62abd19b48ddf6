package conditions_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-logr/logr/funcr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/internal/conditions"
)

func TestFitMessage(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		limit int
		cut   bool
	}{
		{"short", "hello", 10, false},
		{"exactly the limit", strings.Repeat("a", 200), 200, false},
		{"one byte over", strings.Repeat("a", 201), 200, true},
		{"ascii far over", strings.Repeat("x", 100000), conditions.MaxMessage, true},
		{"multibyte on the cut", strings.Repeat("é", 60000), conditions.MaxMessage, true},
		{"4-byte runes", strings.Repeat("𝄞", 30000), 1024, true},
		{"limit shorter than the marker", strings.Repeat("ü", 100), 20, true},
		{"empty", "", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, cut := conditions.FitMessage(tc.in, tc.limit)
			assert.Equal(t, tc.cut, cut)
			assert.LessOrEqual(t, len(out), tc.limit)
			assert.True(t, utf8.ValidString(out), "cut on a UTF-8 boundary")
			if !tc.cut {
				assert.Equal(t, tc.in, out)
				return
			}
			if tc.limit >= 200 {
				assert.Contains(t, out, "[truncated: ")
				assert.Contains(t, out, "of "+strconv.Itoa(len(tc.in))+" bytes")
				assert.True(t, strings.HasPrefix(tc.in, out[:strings.Index(out, " ... [truncated")]), "keeps the beginning")
				assert.Greater(t, len(out), tc.limit-4, "uses the room it has")
			}
		})
	}
}

func TestFitStatusCutsEveryMessage(t *testing.T) {
	long := strings.Repeat("y", 100000)
	work := &workv1.ManifestWork{Status: workv1.ManifestWorkStatus{
		Conditions: []metav1.Condition{{Type: "Applied", Message: "short"}, {Type: "Available", Message: long}},
		ResourceStatus: workv1.ManifestResourceStatus{Manifests: []workv1.ManifestCondition{
			{Conditions: []metav1.Condition{{Type: "Applied", Message: long}}},
		}},
	}}
	cuts := conditions.FitStatus(work)
	require.Len(t, cuts, 2)
	assert.Equal(t, "status.conditions[1].message", cuts[0].Path)
	assert.Equal(t, "status.resourceStatus.manifests[0].conditions[0].message", cuts[1].Path)
	assert.Equal(t, long, cuts[1].Full)
	assert.Equal(t, "short", work.Status.Conditions[0].Message)
	assert.LessOrEqual(t, len(work.Status.Conditions[1].Message), conditions.MaxMessage)
	assert.LessOrEqual(t, len(work.Status.ResourceStatus.Manifests[0].Conditions[0].Message), conditions.MaxMessage)
	assert.Empty(t, conditions.FitStatus(work), "a fitted status fits")
}

func TestFitStatusSharesTheBudget(t *testing.T) {
	long := strings.Repeat("z", 40000)
	var ms []workv1.ManifestCondition
	for range 300 {
		ms = append(ms, workv1.ManifestCondition{Conditions: []metav1.Condition{{Message: long}, {Message: "ok"}}})
	}
	work := &workv1.ManifestWork{Status: workv1.ManifestWorkStatus{ResourceStatus: workv1.ManifestResourceStatus{Manifests: ms}}}
	cuts := conditions.FitStatus(work)
	require.Len(t, cuts, 300)
	total := 0
	for _, m := range work.Status.ResourceStatus.Manifests {
		for _, c := range m.Conditions {
			total += len(c.Message)
		}
	}
	assert.LessOrEqual(t, total, conditions.TotalBudget)
	assert.Equal(t, conditions.MinMessage, cuts[0].Limit)
}

func TestFitStatusOfAPlainStruct(t *testing.T) {
	type detail struct {
		Message string `json:"message"`
	}
	s := &struct {
		Details []detail    `json:"details"`
		Ptr     *detail     `json:"ptr"`
		Any     any         `json:"any"`
		Bytes   []byte      `json:"bytes"`
		Time    metav1.Time `json:"time"`
	}{Details: []detail{{Message: strings.Repeat("a", 40000)}}, Ptr: &detail{Message: strings.Repeat("b", 40000)}}
	cuts := conditions.FitStatus(s)
	require.Len(t, cuts, 2)
	assert.Equal(t, "details[0].message", cuts[0].Path)
	assert.Equal(t, "ptr.message", cuts[1].Path)
}

func TestReportLogsTheFullTextOnce(t *testing.T) {
	var lines []string
	log := funcr.New(func(_, args string) { lines = append(lines, args) }, funcr.Options{})
	rec := &recorder{}
	long := strings.Repeat("q", 50000)
	for range 3 {
		work := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: "w", Namespace: "c1", UID: "u1"},
			Status: workv1.ManifestWorkStatus{Conditions: []metav1.Condition{{Type: "Applied", Message: long}}}}
		conditions.Report(log, rec, work, conditions.FitStatus(work))
	}
	require.Len(t, lines, 1, "the same cut is reported once")
	assert.Contains(t, lines[0], long)
	require.Len(t, rec.notes, 1)
	assert.Contains(t, rec.notes[0], "status.conditions[0].message (50000 bytes)")
	assert.LessOrEqual(t, len(rec.notes[0]), 1024)
}

type recorder struct{ notes []string }

func (r *recorder) Eventf(_ runtime.Object, _ runtime.Object, _, reason, _, note string, args ...any) {
	r.notes = append(r.notes, reason+": "+fmt.Sprintf(note, args...))
}

func TestSameMessage(t *testing.T) {
	long := strings.Repeat("é", 30000) + "end"
	cut, _ := conditions.FitMessage(long, 1024)
	other := strings.Repeat("é", 30000) + "END"
	for _, tc := range []struct {
		name         string
		stored, full string
		want         bool
	}{
		{"equal", "a", "a", true},
		{"different", "a", "b", false},
		{"a cut of it", cut, long, true},
		{"a cut of another text", cut, other, false},
		{"a cut of a longer text", cut, long + "x", false},
		{"looks cut but is not", "x ... [truncated: 5 of 6 bytes; y]", "x", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, conditions.SameMessage(tc.stored, tc.full))
		})
	}
}
