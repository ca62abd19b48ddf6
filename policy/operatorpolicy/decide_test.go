package operatorpolicy_test

import (
	"testing"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/policy/operatorpolicy"
)

const sub = `{"name":"compliance-operator","namespace":"openshift-compliance","source":"redhat-operators","sourceNamespace":"openshift-marketplace"}`

// opPolicy builds an OperatorPolicy as policy-collection's
// policy-compliance-operator-install writes it.
func opPolicy(action policyv1.RemediationAction, ct policyv1.ComplianceType, subscription string, versions ...string) *policyv1beta1.OperatorPolicy {
	p := &policyv1beta1.OperatorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "cluster1", Name: "operatorpolicy-comp-operator"},
		Spec: policyv1beta1.OperatorPolicySpec{RemediationAction: action, ComplianceType: ct, UpgradeApproval: "Automatic",
			OperatorGroup: &runtime.RawExtension{Raw: []byte(`{"name":"compliance-operator","namespace":"openshift-compliance","targetNamespaces":["openshift-compliance"]}`)},
			Subscription:  runtime.RawExtension{Raw: []byte(subscription)},
			ComplianceConfig: policyv1beta1.ComplianceConfig{CatalogSourceUnhealthy: "Compliant", DeploymentsUnavailable: "NonCompliant",
				UpgradesAvailable: "Compliant"}}}
	for _, v := range versions {
		p.Spec.Versions = append(p.Spec.Versions, policyv1.NonEmptyString(v))
	}
	return p
}

const ns = "openshift-compliance"

func og() operatorsv1.OperatorGroup {
	return operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compliance-operator"},
		Spec: operatorsv1.OperatorGroupSpec{TargetNamespaces: []string{ns}}}
}

func subscription(installed string) *operatorsv1alpha1.Subscription {
	s := &operatorsv1alpha1.Subscription{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compliance-operator"},
		Spec: &operatorsv1alpha1.SubscriptionSpec{Package: "compliance-operator", CatalogSource: "redhat-operators", CatalogSourceNamespace: "openshift-marketplace"}}
	s.Status.InstalledCSV = installed
	return s
}

func plan(name string, phase operatorsv1alpha1.InstallPlanPhase, csvs ...string) operatorsv1alpha1.InstallPlan {
	return operatorsv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		OwnerReferences: []metav1.OwnerReference{{Kind: "Subscription", Name: "compliance-operator", APIVersion: "operators.coreos.com/v1alpha1", UID: "u"}}},
		Spec:   operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: csvs, Approval: operatorsv1alpha1.ApprovalManual},
		Status: operatorsv1alpha1.InstallPlanStatus{Phase: phase}}
}

func csv(name string, phase operatorsv1alpha1.ClusterServiceVersionPhase) *operatorsv1alpha1.ClusterServiceVersion {
	return &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: operatorsv1alpha1.ClusterServiceVersionStatus{Phase: phase, Reason: "InstallSucceeded", Message: "install strategy completed with no errors"}}
}

func deployment(name string, available bool) appsv1.Deployment {
	s := corev1.ConditionFalse
	if available {
		s = corev1.ConditionTrue
	}
	return appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Status: appsv1.DeploymentStatus{Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: s}}}}
}

func ready() *operatorsv1alpha1.CatalogSource {
	return &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-marketplace", Name: "redhat-operators"},
		Status: operatorsv1alpha1.CatalogSourceStatus{GRPCConnectionState: &operatorsv1alpha1.GRPCConnectionState{LastObservedState: "READY"}}}
}

func installed() operatorpolicy.Facts {
	return operatorpolicy.Facts{OLM: true, OperatorGroups: []operatorsv1.OperatorGroup{og()}, Subscription: subscription("compliance-operator.v1.6.0"),
		InstallPlans: []operatorsv1alpha1.InstallPlan{plan("install-a", operatorsv1alpha1.InstallPlanPhaseComplete, "compliance-operator.v1.6.0")},
		CSV:          csv("compliance-operator.v1.6.0", operatorsv1alpha1.CSVPhaseSucceeded),
		Deployments:  []appsv1.Deployment{deployment("compliance-operator", true)}, CRDs: []string{"compliancescans.compliance.openshift.io"},
		CatalogSource: ready()}
}

func TestDecide(t *testing.T) {
	musthave, mustnothave := policyv1.ComplianceType("musthave"), policyv1.ComplianceType("mustnothave")
	inform, enforce := policyv1.RemediationAction("inform"), policyv1.RemediationAction("enforce")
	upgrade := installed()
	upgrade.InstallPlans = append(upgrade.InstallPlans, plan("install-b", operatorsv1alpha1.InstallPlanPhaseRequiresApproval, "compliance-operator.v1.7.0"))
	unavailable := installed()
	unavailable.Deployments = []appsv1.Deployment{deployment("compliance-operator", false)}
	// OLM resolved another Subscription of the namespace into the same plan:
	// its CSV (a gated upgrade of another operator) is not the policy's to approve.
	shared := installed()
	sp := plan("install-c", operatorsv1alpha1.InstallPlanPhaseRequiresApproval, "compliance-operator.v1.7.0", "other-operator.v2.0.0")
	sp.OwnerReferences = append(sp.OwnerReferences, metav1.OwnerReference{Kind: "Subscription", Name: "other-operator", APIVersion: "operators.coreos.com/v1alpha1", UID: "o"})
	shared.InstallPlans = append(shared.InstallPlans, sp)
	failed := installed()
	failed.CSV = csv("compliance-operator.v1.6.0", operatorsv1alpha1.CSVPhaseFailed)
	failed.CSV.Status.Reason, failed.CSV.Status.Message = "InstallCheckFailed", "install timeout"
	for _, tc := range []struct {
		name    string
		policy  *policyv1beta1.OperatorPolicy
		facts   operatorpolicy.Facts
		state   policyv1.ComplianceState
		message string
		actions []string
	}{
		{
			name: "no OLM: NonCompliant, saying so", policy: opPolicy(enforce, musthave, sub), facts: operatorpolicy.Facts{},
			state: policyv1.NonCompliant, message: "NonCompliant; " + operatorpolicy.NoOLMMessage,
		},
		{
			name: "invalid spec", policy: opPolicy(inform, musthave, `{"name":"compliance-operator","source":"s","sourceNamespace":"m","installPlanApproval":"Automatic"}`),
			facts: operatorpolicy.Facts{OLM: true}, state: policyv1.NonCompliant,
			// The namespace comes from spec.operatorGroup, as upstream's.
			message: "NonCompliant; installPlanApproval is prohibited in spec.subscription",
		},
		{
			name: "inform, nothing installed", policy: opPolicy(inform, musthave, sub), facts: operatorpolicy.Facts{OLM: true},
			state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup required by the policy was not found, the Subscription required by the policy was not found, " +
				"there are no relevant InstallPlans in the namespace, a relevant installed ClusterServiceVersion could not be found, no CRDs were found for the operator, " +
				"there are no relevant deployments because the ClusterServiceVersion is missing, CatalogSource 'redhat-operators' was not found",
		},
		{
			name: "enforce, nothing installed: creates the OperatorGroup and the Subscription", policy: opPolicy(enforce, musthave, sub), facts: operatorpolicy.Facts{OLM: true},
			state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup required by the policy was created, the Subscription required by the policy was created, " +
				"there are no relevant InstallPlans in the namespace, a relevant installed ClusterServiceVersion could not be found, no CRDs were found for the operator, " +
				"there are no relevant deployments because the ClusterServiceVersion is missing, CatalogSource 'redhat-operators' was not found",
			actions: []string{"create OperatorGroup openshift-compliance/compliance-operator", "create Subscription openshift-compliance/compliance-operator"},
		},
		{
			name: "installed and healthy", policy: opPolicy(inform, musthave, sub), facts: installed(), state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"no InstallPlans requiring approval were found, ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
		},
		{
			name: "upgrade, Automatic, enforce: approved", policy: opPolicy(enforce, musthave, sub), facts: upgrade, state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"the InstallPlan for compliance-operator.v1.7.0 was approved, ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
			actions: []string{"approve InstallPlan openshift-compliance/install-b"},
		},
		{
			name: "upgrade to a version not allowed: not approved", policy: opPolicy(enforce, musthave, sub, "compliance-operator.v1.6.0"), facts: upgrade, state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"an InstallPlan to update to [compliance-operator.v1.7.0] is available for approval but approval for [compliance-operator.v1.7.0] is required, " +
				"ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
		},
		{
			name: "upgrade plan shared with another Subscription, Automatic, enforce: not approved", policy: opPolicy(enforce, musthave, sub), facts: shared, state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"an InstallPlan to update to [compliance-operator.v1.7.0, other-operator.v2.0.0] is available for approval but approval for [compliance-operator.v1.7.0, other-operator.v2.0.0] is required, " +
				"ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
		},
		{
			name: "shared upgrade plan whose CSVs spec.versions lists: approved", policy: opPolicy(enforce, musthave, sub, "compliance-operator.v1.6.0", "compliance-operator.v1.7.0", "other-operator.v2.0.0"),
			facts: shared, state: policyv1.Compliant,
			actions: []string{"approve InstallPlan openshift-compliance/install-c"},
		},
		{
			name: "installed version not allowed", policy: opPolicy(inform, musthave, sub, "compliance-operator.v1.7.0"), facts: installed(), state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"no InstallPlans requiring approval were found, ClusterServiceVersion (compliance-operator.v1.6.0) is not an approved version, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
		},
		{
			name: "Deployment unavailable", policy: opPolicy(inform, musthave, sub), facts: unavailable, state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"no InstallPlans requiring approval were found, ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, " +
				"there are CRDs present for the operator, the deployments compliance-operator do not have their minimum availability, CatalogSource was found",
		},
		{
			name: "CSV failed: its phase and message", policy: opPolicy(inform, musthave, sub), facts: failed, state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, " +
				"no InstallPlans requiring approval were found, ClusterServiceVersion (compliance-operator.v1.6.0) - install timeout, " +
				"there are CRDs present for the operator, all operator Deployments have their minimum availability, CatalogSource was found",
		},
		{
			name: "mustnothave, enforce: removes per removalBehavior", policy: opPolicy(enforce, mustnothave, sub), facts: installed(), state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup (compliance-operator) was deleted, the Subscription (compliance-operator) was deleted, " +
				"MustNotHave policies ignore kind InstallPlan, the ClusterServiceVersion (compliance-operator.v1.6.0) was deleted, " +
				"the policy specifies to keep the CustomResourceDefinition, MustNotHave policies ignore kind Deployment, MustNotHave policies ignore kind CatalogSource",
			actions: []string{"delete OperatorGroup openshift-compliance/compliance-operator", "delete Subscription openshift-compliance/compliance-operator",
				"delete ClusterServiceVersion openshift-compliance/compliance-operator.v1.6.0"},
		},
		{
			name: "mustnothave, inform, installed", policy: opPolicy(inform, mustnothave, sub), facts: installed(), state: policyv1.NonCompliant,
			message: "NonCompliant; the policy spec is valid, the OperatorGroup (compliance-operator) is present, the Subscription (compliance-operator) is present, " +
				"MustNotHave policies ignore kind InstallPlan, the ClusterServiceVersion (compliance-operator.v1.6.0) is present, " +
				"the policy specifies to keep the CustomResourceDefinition, MustNotHave policies ignore kind Deployment, MustNotHave policies ignore kind CatalogSource",
		},
		{
			name: "mustnothave, nothing there", policy: opPolicy(inform, mustnothave, sub), facts: operatorpolicy.Facts{OLM: true}, state: policyv1.Compliant,
			message: "Compliant; the policy spec is valid, the OperatorGroup is not present, the Subscription is not present, " +
				"MustNotHave policies ignore kind InstallPlan, the ClusterServiceVersion is not present, " +
				"the CustomResourceDefinition is not present, MustNotHave policies ignore kind Deployment, MustNotHave policies ignore kind CatalogSource",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := operatorpolicy.Parse(tc.policy, tc.policy.Spec.Subscription.Raw)
			dec := operatorpolicy.Decide(tc.policy, d, tc.facts)
			assert.Equal(t, tc.state, dec.Compliance)
			if tc.message != "" {
				assert.Equal(t, tc.message, dec.Message)
			}
			var actions []string
			for _, a := range dec.Actions {
				actions = append(actions, a.String())
			}
			assert.Equal(t, tc.actions, actions)
			var compliant *metav1.Condition
			for i := range dec.Conditions {
				if dec.Conditions[i].Type == operatorpolicy.CompliantType {
					compliant = &dec.Conditions[i]
				}
			}
			if assert.NotNil(t, compliant) {
				assert.Equal(t, dec.Message, compliant.Message)
			}
		})
	}
}
