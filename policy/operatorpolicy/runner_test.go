package operatorpolicy_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	olmcrds "github.com/operator-framework/api/crds"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
	"flotilla.dev/flotilla/policy/operatorpolicy"
	"flotilla.dev/flotilla/test/testenv"
)

var c client.Client

// One cluster with the policy CRDs and no OLM; the engine running on it.
// The tests install OLM's real CRDs (operator-framework/api) when they need
// them; no OLM runs: the tests set the statuses OLM would set.
func TestMain(m *testing.M) {
	env, err := testenv.New(testenv.Options{Clusters: 1, NoHub: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "testenv:", err)
		os.Exit(1)
	}
	cfg := env.Clusters[0].Config
	if c, err = client.New(cfg, client.Options{Scheme: operatorpolicy.Scheme()}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- operatorpolicy.Run(ctx, operatorpolicy.Options{Config: cfg}) }()
	code := m.Run()
	cancel()
	if err := <-done; err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
	}
	_ = env.Stop()
	os.Exit(code)
}

func waitPolicy(t *testing.T, name string, state policyv1.ComplianceState, contains string) *policyv1beta1.OperatorPolicy {
	t.Helper()
	var p policyv1beta1.OperatorPolicy
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, c.Get(context.Background(), client.ObjectKey{Namespace: "default", Name: name}, &p))
		require.Equal(ct, state, p.Status.ComplianceState, "history: %v", p.Status.History)
		require.NotEmpty(ct, p.Status.History)
		assert.Contains(ct, p.Status.History[0].Message, contains)
	}, time.Minute, 50*time.Millisecond)
	return &p
}

func installOLMCRDs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{olmcrds.Subscription(), olmcrds.OperatorGroup(), olmcrds.InstallPlan(),
		olmcrds.ClusterServiceVersion(), olmcrds.CatalogSource()} {
		require.NoError(t, client.IgnoreAlreadyExists(c.Create(ctx, crd)))
	}
	for _, name := range []string{"subscriptions", "operatorgroups", "installplans", "clusterserviceversions", "catalogsources"} {
		require.EventuallyWithT(t, func(ct *assert.CollectT) {
			var crd apiextensionsv1.CustomResourceDefinition
			require.NoError(ct, c.Get(ctx, client.ObjectKey{Name: name + ".operators.coreos.com"}, &crd))
			established := false
			for _, cond := range crd.Status.Conditions {
				established = established || cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue
			}
			assert.True(ct, established)
		}, time.Minute, 50*time.Millisecond)
	}
}

// The whole life of an operator installed by an enforced OperatorPolicy: no
// OLM first (NonCompliant, saying so), then OLM's CRDs appear and the engine
// creates the OperatorGroup and the Subscription, approves the first
// InstallPlan, and reports the CSV's phase and its Deployment's availability
// as OLM (played by the test) moves them.
func TestOperatorLifecycle(t *testing.T) {
	ctx := context.Background()
	p := opPolicy("enforce", "musthave", sub)
	p.Namespace = "default"
	require.NoError(t, c.Create(ctx, p))
	waitPolicy(t, p.Name, policyv1.NonCompliant, operatorpolicy.NoOLMMessage)

	installOLMCRDs(t)
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	require.NoError(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-marketplace"}}))
	got := waitPolicy(t, p.Name, policyv1.NonCompliant, "the Subscription matches what is required by the policy")
	var history []string
	for _, h := range got.Status.History {
		history = append(history, h.Message)
	}
	assert.Contains(t, strings.Join(history, "\n"), "the OperatorGroup required by the policy was created, the Subscription required by the policy was created")
	var og operatorsv1.OperatorGroup
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compliance-operator"}, &og))
	assert.Equal(t, []string{ns}, og.Spec.TargetNamespaces)
	var s operatorsv1alpha1.Subscription
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "compliance-operator"}, &s))
	assert.Equal(t, operatorsv1alpha1.ApprovalManual, s.Spec.InstallPlanApproval)
	assert.Equal(t, "redhat-operators", s.Spec.CatalogSource)

	// OLM resolves: a catalog, and an InstallPlan waiting for approval.
	cs := &operatorsv1alpha1.CatalogSource{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-marketplace", Name: "redhat-operators"},
		Spec: operatorsv1alpha1.CatalogSourceSpec{SourceType: operatorsv1alpha1.SourceTypeGrpc, Image: "example/index:1"}}
	require.NoError(t, c.Create(ctx, cs))
	cs.Status.GRPCConnectionState = &operatorsv1alpha1.GRPCConnectionState{LastObservedState: "READY", LastConnectTime: metav1.Now()}
	require.NoError(t, c.Status().Update(ctx, cs))
	ip := &operatorsv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "install-abcde",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: s.Name, UID: s.UID}}},
		Spec: operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{"compliance-operator.v1.6.0"}, Approval: operatorsv1alpha1.ApprovalManual}}
	require.NoError(t, c.Create(ctx, ip))
	ip.Status = operatorsv1alpha1.InstallPlanStatus{Phase: operatorsv1alpha1.InstallPlanPhaseRequiresApproval, CatalogSources: []string{}}
	require.NoError(t, c.Status().Update(ctx, ip))
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		require.NoError(ct, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ip.Name}, ip))
		assert.True(ct, ip.Spec.Approved, "the engine approves the first installation")
	}, time.Minute, 50*time.Millisecond)

	// OLM installs: the CSV, its Deployment, not yet available.
	depSpec := appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "co"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "co"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "co", Image: "example/co:1"}}}}}
	csvObj := &operatorsv1alpha1.ClusterServiceVersion{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compliance-operator.v1.6.0"},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{DisplayName: "Compliance Operator",
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{StrategyName: "deployment", StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
				DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{Name: "compliance-operator", Spec: depSpec}}}}}}
	require.NoError(t, c.Create(ctx, csvObj))
	csvObj.Status = operatorsv1alpha1.ClusterServiceVersionStatus{Phase: operatorsv1alpha1.CSVPhaseSucceeded, Reason: operatorsv1alpha1.CSVReasonInstallSuccessful,
		Message: "install strategy completed with no errors"}
	require.NoError(t, c.Status().Update(ctx, csvObj))
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "compliance-operator", Labels: map[string]string{operatorpolicy.OwnerLabel: csvObj.Name}},
		Spec: depSpec}
	require.NoError(t, c.Create(ctx, dep))
	// The control plane's deployment controller sets its status: with no
	// node to run its Pod, not Available.
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: s.Name}, &s))
	s.Status = operatorsv1alpha1.SubscriptionStatus{InstalledCSV: csvObj.Name, CurrentCSV: csvObj.Name, LastUpdated: metav1.Now(),
		InstallPlanRef: &corev1.ObjectReference{Namespace: ns, Name: ip.Name}}
	require.NoError(t, c.Status().Update(ctx, &s))
	waitPolicy(t, p.Name, policyv1.NonCompliant, "the deployments compliance-operator do not have their minimum availability")

	// Available: Compliant, with upstream's message.
	// Scaled to zero, the deployment controller finds it Available.
	require.NoError(t, retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(dep), dep); err != nil {
			return err
		}
		dep.Spec.Replicas = ptr.To[int32](0)
		return c.Update(ctx, dep)
	}))
	got = waitPolicy(t, p.Name, policyv1.Compliant, "Compliant; the policy spec is valid")
	assert.Equal(t, "Compliant; the policy spec is valid, the OperatorGroup matches what is required by the policy, the Subscription matches what is required by the policy, "+
		"no InstallPlans requiring approval were found, ClusterServiceVersion (compliance-operator.v1.6.0) - install strategy completed with no errors, "+
		"no CRDs were found for the operator, all operator Deployments have their minimum availability, CatalogSource was found", got.Status.History[0].Message)
	var types []string
	for _, cond := range got.Status.Conditions {
		types = append(types, cond.Type)
	}
	assert.Equal(t, []string{"CatalogSourcesUnhealthy", "ClusterServiceVersionCompliant", "Compliant", "CustomResourceDefinitionCompliant",
		"DeploymentCompliant", "InstallPlanCompliant", "OperatorGroupCompliant", "SubscriptionCompliant", "ValidPolicySpec"}, types)

	// An upgrade waits: upgradeApproval None leaves it (Compliant, as
	// complianceConfig.upgradesAvailable says).
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: "default", Name: p.Name}, p))
	p.Spec.UpgradeApproval = "None"
	require.NoError(t, c.Update(ctx, p))
	up := &operatorsv1alpha1.InstallPlan{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "install-fghij",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "operators.coreos.com/v1alpha1", Kind: "Subscription", Name: s.Name, UID: s.UID}}},
		Spec: operatorsv1alpha1.InstallPlanSpec{ClusterServiceVersionNames: []string{"compliance-operator.v1.7.0"}, Approval: operatorsv1alpha1.ApprovalManual}}
	require.NoError(t, c.Create(ctx, up))
	up.Status = operatorsv1alpha1.InstallPlanStatus{Phase: operatorsv1alpha1.InstallPlanPhaseRequiresApproval, CatalogSources: []string{}}
	require.NoError(t, c.Status().Update(ctx, up))
	waitPolicy(t, p.Name, policyv1.Compliant, "an InstallPlan to update to [compliance-operator.v1.7.0] is available for approval")
	require.NoError(t, c.Get(ctx, client.ObjectKey{Namespace: ns, Name: up.Name}, up))
	assert.False(t, up.Spec.Approved)
}

// A policy the engine cannot act on is NonCompliant with the reason.
func TestInvalidOperatorPolicy(t *testing.T) {
	ctx := context.Background()
	installOLMCRDs(t)
	p := &policyv1beta1.OperatorPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "no-namespace"},
		Spec: policyv1beta1.OperatorPolicySpec{RemediationAction: "inform", ComplianceType: "musthave", UpgradeApproval: "None",
			Subscription: runtime.RawExtension{Raw: []byte(`{"name":"x","source":"s","sourceNamespace":"m","bogus":1}`)}}}
	require.NoError(t, c.Create(ctx, p))
	got := waitPolicy(t, p.Name, policyv1.NonCompliant, "spec.subscription is invalid")
	assert.Contains(t, got.Status.History[0].Message, `unknown field "bogus"`)
}
