package configpolicy_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/dryrun"
)

// `policy dryrun --kubeconfig` reads the live cluster, asks the apiserver
// whether updates would change anything, and writes nothing.
func TestDryrunAgainstLiveCluster(t *testing.T) {
	ns := namespace(t, "live-dryrun", nil)
	apply(t, ns, `{apiVersion: v1, kind: ConfigMap, metadata: {name: settings}, data: {level: debug}}`)
	apply(t, ns, webDeployment)
	file := filepath.Join(t.TempDir(), "policy.yaml")
	require.NoError(t, os.WriteFile(file, []byte(`
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {name: live, namespace: live-dryrun}
spec:
  remediationAction: enforce
  object-templates:
  - complianceType: musthave
    recordDiff: InStatus
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: live-dryrun}, data: {level: info}}
  - complianceType: musthave
    objectDefinition: {apiVersion: v1, kind: ConfigMap, metadata: {name: missing, namespace: live-dryrun}, data: {a: "1"}}
  - complianceType: mustonlyhave
    objectDefinition:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: live-dryrun}
      spec:
        selector: {matchLabels: {app: web}}
        template:
          metadata: {labels: {app: web}}
          spec:
            containers: [{name: web, image: "nginx:1.27"}]
`), 0o600))

	rep, err := dryrun.Run(ctx, dryrun.Options{PolicyFile: file, Cluster: testCfg})
	require.NoError(t, err)
	require.Len(t, rep.Policies, 1)
	st := rep.Policies[0].Status
	require.Equal(t, policyv1.NonCompliant, st.ComplianceState)
	var msgs []string
	for _, d := range st.CompliancyDetails {
		msgs = append(msgs, d.Conditions[0].Message)
	}
	require.Equal(t, []string{
		"configmaps [settings] found but not as specified in namespace live-dryrun",
		"configmaps [missing] not found in namespace live-dryrun",
		// Defaulted fields: the apiserver says the update would change nothing.
		"deployments [web] found as specified in namespace live-dryrun",
	}, msgs)
	var verbs []string
	for _, a := range rep.Policies[0].Actions {
		verbs = append(verbs, string(a.Verb)+" "+a.Name)
	}
	require.Equal(t, []string{"update settings", "create missing"}, verbs)
	require.Contains(t, rep.Policies[0].Actions[0].Diff, "+  level: info")

	// Nothing changed.
	cm, err := kube.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	require.NoError(t, err)
	require.Equal(t, "debug", cm.Data["level"])
	_, err = kube.CoreV1().ConfigMaps(ns).Get(ctx, "missing", metav1.GetOptions{})
	require.Error(t, err)

	_, err = dryrun.Run(ctx, dryrun.Options{PolicyFile: file, Cluster: testCfg, From: []string{file}})
	require.ErrorContains(t, err, "either a cluster or --from files")
}
