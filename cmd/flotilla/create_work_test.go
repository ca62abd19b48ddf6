package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	clusterclient "open-cluster-management.io/api/client/cluster/clientset/versioned"
	clusterv1 "open-cluster-management.io/api/cluster/v1"

	"flotilla.dev/flotilla/test/testenv"
)

// flotilla runs the CLI in-process and returns what it printed.
func flotilla(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// TestWorkCommands drives create/get/delete work through cobra against a real
// hub: flags reach the library as meant (every --clusters value counts).
func TestWorkCommands(t *testing.T) {
	env := testenv.Start(t, testenv.Options{})
	kc := env.Hub.KubeconfigPath
	cs := kubernetes.NewForConfigOrDie(env.Hub.Config)
	clusters := clusterclient.NewForConfigOrDie(env.Hub.Config)
	for _, ns := range []string{"cluster1", "cluster2", "cluster3"} {
		_, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
		_, err = clusters.ClusterV1().ManagedClusters().Create(context.Background(), &clusterv1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		require.NoError(t, err)
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "app.yaml")
	require.NoError(t, os.WriteFile(file, []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: app}\n---\n"+
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: app}\n"), 0o600))

	// All or nothing: a cluster that does not exist is named, and no work is
	// created in the others.
	out, err := flotilla(t, "create", "work", "app", "-f", file, "--clusters", "cluster1,doesnotexist", "--kubeconfig", kc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "cluster doesnotexist does not exist: no ManagedCluster doesnotexist on the hub")
	assert.Contains(t, err.Error(), "nothing was created")
	_, getErr := flotilla(t, "get", "work", "app", "--cluster", "cluster1", "--kubeconfig", kc)
	assert.Error(t, getErr, "no work in cluster1")

	// Unbounded input is refused quickly, before anything is written.
	_, err = flotilla(t, "create", "work", "app", "-f", "/dev/zero", "--clusters", "cluster1", "--kubeconfig", kc)
	assert.EqualError(t, err, "/dev/zero is larger than 8 MiB (the limit for manifest files)")

	out, err = flotilla(t, "create", "work", "app", "-f", file, "--clusters", "cluster1,cluster2", "-n", "cluster3", "--kubeconfig", kc)
	require.NoError(t, err, out)
	for _, c := range []string{"cluster1", "cluster2", "cluster3"} {
		assert.Contains(t, out, "work app created in cluster "+c)
	}

	out, err = flotilla(t, "create", "work", "app", "-f", dir, "--clusters", "cluster1", "--kubeconfig", kc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "use --overwrite")

	out, err = flotilla(t, "get", "works", "--clusters", "cluster1", "--clusters", "cluster3", "--kubeconfig", kc)
	require.NoError(t, err)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 3, out)
	assert.Regexp(t, `^CLUSTER +NAME +MANIFESTS +APPLIED +AVAILABLE +AGE$`, lines[0])
	assert.Regexp(t, `^cluster1 +app +2 +Unknown +Unknown +`, lines[1])
	assert.Regexp(t, `^cluster3 +app +2 `, lines[2], "every given cluster, not only the last")

	out, err = flotilla(t, "get", "work", "app", "--cluster", "cluster2", "-o", "yaml", "--kubeconfig", kc)
	require.NoError(t, err)
	assert.Contains(t, out, "kind: ManifestWork")
	assert.Contains(t, out, "namespace: cluster2")

	// The spec flags reach the work.
	jobFile := filepath.Join(t.TempDir(), "job.yaml")
	require.NoError(t, os.WriteFile(jobFile, []byte("apiVersion: batch/v1\nkind: Job\nmetadata: {name: migrate, namespace: app}\n"), 0o600))
	out, err = flotilla(t, "create", "work", "migrate", "-f", jobFile, "--clusters", "cluster1", "--kubeconfig", kc,
		"--executor", "app/deployer", "--ignore-field", ".spec.parallelism", "--ignore-field", "/metadata/labels/x:OnSpokeChange",
		"--ttl-after-finished", "300", "--well-known-conditions")
	require.NoError(t, err, out)
	out, err = flotilla(t, "get", "work", "migrate", "--cluster", "cluster1", "-o", "yaml", "--kubeconfig", kc)
	require.NoError(t, err)
	for _, want := range []string{"name: deployer", "ttlSecondsAfterFinished: 300", "type: ServerSideApply", "- .spec.parallelism",
		"- /metadata/labels/x", "condition: OnSpokeChange", "condition: Complete", "type: WellKnownConditions", "resource: jobs"} {
		assert.Contains(t, out, want)
	}
	_, err = flotilla(t, "create", "work", "bad", "-f", jobFile, "--clusters", "cluster1", "--kubeconfig", kc, "--ignore-field", "spec.x")
	assert.ErrorContains(t, err, `--ignore-field "spec.x": want a JSON pointer`)
	_, err = flotilla(t, "delete", "work", "migrate", "--clusters", "cluster1", "--kubeconfig", kc)
	require.NoError(t, err)

	_, err = flotilla(t, "get", "works", "-o", "xml", "--kubeconfig", kc)
	assert.EqualError(t, err, `unknown output format "xml": use table, json or yaml`)

	_, err = flotilla(t, "delete", "work", "app", "--clusters", "cluster1,doesnotexist", "--kubeconfig", kc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "work app not found in cluster doesnotexist")
	assert.Contains(t, err.Error(), "nothing was deleted")

	out, err = flotilla(t, "delete", "work", "app", "--clusters", "cluster1,cluster2,cluster3", "--kubeconfig", kc)
	require.NoError(t, err, out)
	out, err = flotilla(t, "get", "works", "--kubeconfig", kc)
	require.NoError(t, err)
	assert.Equal(t, "CLUSTER   NAME   MANIFESTS   APPLIED   AVAILABLE   AGE\n", out, "no agents here, so no finalizers: the works are gone")
}
