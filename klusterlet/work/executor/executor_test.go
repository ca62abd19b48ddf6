package executor

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/runtime/schema"
	workv1 "open-cluster-management.io/api/work/v1"
)

func TestVerbs(t *testing.T) {
	for _, tc := range []struct {
		name     string
		strategy *workv1.UpdateStrategy
		deletes  bool
		want     []string
	}{
		{"default Update, deleted with the work", nil, true, []string{"get", "create", "update", "patch", "delete"}},
		{"Update, orphaned", &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeUpdate}, false, []string{"get", "create", "update", "patch"}},
		{"ServerSideApply", &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeServerSideApply}, true, []string{"get", "create", "update", "patch", "delete"}},
		{"CreateOnly", &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeCreateOnly}, true, []string{"get", "create", "delete"}},
		{"ReadOnly never writes nor deletes", &workv1.UpdateStrategy{Type: workv1.UpdateStrategyTypeReadOnly}, true, []string{"get"}},
	} {
		t.Run(tc.name, func(t *testing.T) { assert.Equal(t, tc.want, Verbs(tc.strategy, tc.deletes)) })
	}
}

func TestServiceAccount(t *testing.T) {
	_, err := ServiceAccount(&workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: "User"}})
	assert.ErrorContains(t, err, `spec.executor.subject.type "User" is not supported`)
	_, err = ServiceAccount(&workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount}})
	assert.ErrorContains(t, err, "needs a namespace and a name")
	sa, err := ServiceAccount(&workv1.ManifestWorkExecutor{Subject: workv1.ManifestWorkExecutorSubject{Type: workv1.ExecutorSubjectTypeServiceAccount,
		ServiceAccount: &workv1.ManifestWorkSubjectServiceAccount{Namespace: "app", Name: "deployer"}}})
	assert.NoError(t, err)
	assert.Equal(t, "system:serviceaccount:app:deployer", UserName(sa))
}

func TestDeniedErrorMessage(t *testing.T) {
	err := &DeniedError{Executor: "app/deployer", Verbs: []string{"create", "delete"},
		Resource: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, Namespace: "web", Name: "api"}
	assert.Equal(t, `executor ServiceAccount app/deployer may not create, delete deployments.apps "api" in namespace web on the managed cluster; grant it these verbs there (RBAC), or remove spec.executor`, err.Error())
	err = &DeniedError{Executor: "app/deployer", Verbs: []string{"get"}, Resource: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: "web"}
	assert.Contains(t, err.Error(), `may not get namespaces "web" on the managed cluster`)
}
