package deploy

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	workv1 "open-cluster-management.io/api/work/v1"

	"flotilla.dev/flotilla/addons/framework"
)

func work(name string, applied metav1.ConditionStatus, msg string) *workv1.ManifestWork {
	w := &workv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}}
	if applied != "" {
		w.Status.Conditions = []metav1.Condition{{Type: workv1.WorkApplied, Status: applied, Message: msg, ObservedGeneration: 1}}
	}
	return w
}

func TestConditions(t *testing.T) {
	type want map[string]string // type -> "Status/Reason"
	for _, tc := range []struct {
		name  string
		facts Facts
		want  want
	}{
		{"applied, lease, no registration", Facts{Works: []*workv1.ManifestWork{work("w0", "True", "")}, Health: framework.HealthLease},
			want{"ManifestApplied": "True/AddonManifestApplied", "Progressing": "False/Completed", "RegistrationApplied": "True/NilRegistration",
				"Available": "Unknown/WaitingForAgentLease", "Degraded": "False/AsExpected"}},
		{"waiting for the work agent", Facts{Works: []*workv1.ManifestWork{work("w0", "", "")}, Health: framework.HealthNone},
			want{"ManifestApplied": "False/WorkNotApplied", "Progressing": "True/Progressing", "Available": "Unknown/WorkNotApplied"}},
		{"apply failed", Facts{Works: []*workv1.ManifestWork{work("w0", "True", ""), work("w1", "False", "boom")}, Health: framework.HealthNone},
			want{"ManifestApplied": "False/ManifestWorkApplyFailed", "Progressing": "False/Failed", "Available": "False/WorkApplyFailed"}},
		{"render error", Facts{RenderErr: errors.New("template broke"), Health: framework.HealthNone},
			want{"ManifestApplied": "False/AddonManifestAppliedFailed", "Available": "Unknown/WorkNotFound"}},
		{"registration refused", Facts{Registration: &framework.Registration{}, PermissionErr: errors.New("cluster-wide"), Health: framework.HealthLease},
			want{"RegistrationApplied": "False/SetPermissionFailed"}},
		{"registration granted", Facts{Registration: &framework.Registration{}, Health: framework.HealthLease},
			want{"RegistrationApplied": "True/SetPermissionApplied"}},
		{"configs not set yet", Facts{Pending: "waiting for the addon's configs to be set", Health: framework.HealthLease},
			want{"ManifestApplied": "False/WorkNotApplied", "Progressing": "True/Progressing", "Configured": "absent"}},
		{"none health applied", Facts{Works: []*workv1.ManifestWork{work("w0", "True", "")}, Health: framework.HealthNone},
			want{"Available": "True/WorkApplied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Conditions(tc.facts)
			for typ, sr := range tc.want {
				c := meta.FindStatusCondition(got, typ)
				if sr == "absent" {
					assert.Nil(t, c, "%s is not this controller's", typ)
					continue
				}
				if assert.NotNil(t, c, typ) {
					assert.Equal(t, sr, string(c.Status)+"/"+c.Reason, typ)
					assert.NotEmpty(t, c.Message, typ)
				}
			}
		})
	}
}

func TestLeaseAvailableIsTheKlusterletsOnceSet(t *testing.T) {
	existing := []metav1.Condition{{Type: "Available", Status: metav1.ConditionTrue, Reason: "ManagedClusterAddOnLeaseUpdated"}}
	got := Conditions(Facts{Health: framework.HealthLease, Existing: existing})
	assert.Nil(t, meta.FindStatusCondition(got, "Available"))
}

func TestWorkFieldProbe(t *testing.T) {
	probe := &framework.Probe{
		Fields: []framework.ProbeField{{Resource: workv1.ResourceIdentifier{Group: "apps", Resource: "deployments", Name: "agent", Namespace: "ns"}}},
		Check: func(rs []framework.FieldResult) error {
			if len(rs[0].Values) == 0 || rs[0].Values[0].Value.Integer == nil || *rs[0].Values[0].Value.Integer < 1 {
				return errors.New("no ready replica")
			}
			return nil
		},
	}
	w := work("w0", "True", "")
	got := Conditions(Facts{Works: []*workv1.ManifestWork{w}, Health: framework.HealthWorkField, Probe: probe})
	assert.Equal(t, "NoProbeResult", meta.FindStatusCondition(got, "Available").Reason)
	one, zero := int64(1), int64(0)
	for _, tc := range []struct {
		v      *int64
		status metav1.ConditionStatus
	}{{&one, metav1.ConditionTrue}, {&zero, metav1.ConditionFalse}} {
		w.Status.ResourceStatus.Manifests = []workv1.ManifestCondition{{
			ResourceMeta:    workv1.ManifestResourceMeta{Group: "apps", Resource: "deployments", Name: "agent", Namespace: "ns"},
			StatusFeedbacks: workv1.StatusFeedbackResult{Values: []workv1.FeedbackValue{{Name: "ReadyReplicas", Value: workv1.FieldValue{Type: workv1.Integer, Integer: tc.v}}}},
		}}
		got = Conditions(Facts{Works: []*workv1.ManifestWork{w}, Health: framework.HealthWorkField, Probe: probe})
		assert.Equal(t, tc.status, meta.FindStatusCondition(got, "Available").Status)
	}
}
