package dryrun

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// A policy that relates thousands of objects: its status keeps the
// NonCompliant ones within evaluate.RelatedBudget, and the report says
// what it left out.
func TestLargeStatusSaysWhatItLeftOut(t *testing.T) {
	dir := t.TempDir()
	var objs strings.Builder
	const n = 4000
	for i := 0; i < n; i++ {
		v := "ok"
		if i%4 == 0 {
			v = "bad"
		}
		fmt.Fprintf(&objs, "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: cm-%04d, namespace: big, uid: u-%04d}, data: {v: %s}}\n", i, i, v)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "cluster.yaml"), []byte(objs.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "policy.yaml"), []byte(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: every-configmap, namespace: policies}
spec:
  remediationAction: inform
  namespaceSelector: {include: [big]}
  object-templates:
  - complianceType: musthave
    objectSelector: {}
    objectDefinition: {apiVersion: v1, kind: ConfigMap, data: {v: ok}}
`), 0o644))
	rep, err := Run(t.Context(), Options{PolicyFile: filepath.Join(dir, "policy.yaml"), From: []string{filepath.Join(dir, "cluster.yaml")}})
	require.NoError(t, err)
	pr := rep.Policies[0]
	raw, err := json.Marshal(pr.Status.RelatedObjects)
	require.NoError(t, err)
	require.LessOrEqual(t, len(raw), evaluate.RelatedBudget)
	kept := len(pr.Status.RelatedObjects)
	require.Less(t, kept, n)
	nc := 0
	for _, ro := range pr.Status.RelatedObjects {
		if ro.Compliant == "NonCompliant" {
			nc++
		}
	}
	require.Equal(t, n/4, nc, "every NonCompliant object is kept")
	want := fmt.Sprintf("the status lists %d of %d related objects (left out: 0 NonCompliant, %d Compliant), %d without their diff, to stay within 512 KiB; the policy's messages still name every object",
		kept, n, n-kept, n/4)
	require.Equal(t, want, pr.Dropped)

	var out bytes.Buffer
	require.NoError(t, PrintText(&out, rep))
	require.Contains(t, out.String(), "\n  note: "+want+"\n")
	require.Equal(t, 2, ExitCode(rep, nil))
}
