package admission_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"flotilla.dev/flotilla/manifests"
)

var (
	placements   = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placements"}
	clusters     = schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1", Resource: "managedclusters"}
	works        = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1", Resource: "manifestworks"}
	replicasets  = schema.GroupVersionResource{Group: "work.open-cluster-management.io", Version: "v1alpha1", Resource: "manifestworkreplicasets"}
	adcs         = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "addondeploymentconfigs"}
	cmas         = schema.GroupVersionResource{Group: "addon.open-cluster-management.io", Version: "v1alpha1", Resource: "clustermanagementaddons"}
	configPolicy = schema.GroupVersionResource{Group: "policy.open-cluster-management.io", Version: "v1", Resource: "configurationpolicies"}
	certPolicy   = schema.GroupVersionResource{Group: "policy.open-cluster-management.io", Version: "v1", Resource: "certificatepolicies"}
	opPolicy     = schema.GroupVersionResource{Group: "policy.open-cluster-management.io", Version: "v1beta1", Resource: "operatorpolicies"}
)

var seq atomic.Int64

// object decodes a YAML object and gives it a fresh name.
func object(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	require.NoError(t, yaml.Unmarshal([]byte(doc), &u.Object))
	u.SetName(fmt.Sprintf("adm-%d", seq.Add(1)))
	return u
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// A case is one object and what the apiserver must answer: refused with a
// message naming refusal (Invalid), or admitted when refusal is empty.
type admissionCase struct {
	name    string
	gvr     schema.GroupVersionResource
	doc     string
	refusal string
}

func (c admissionCase) run(t *testing.T) {
	obj := object(t, c.doc)
	ns := obj.GetNamespace()
	_, err := dyn.Resource(c.gvr).Namespace(ns).Create(ctx(t), obj, metav1.CreateOptions{})
	if c.refusal == "" {
		require.NoError(t, err)
		return
	}
	require.Error(t, err, "%s was admitted", c.name)
	t.Logf("refused: %v", err)
	assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
	assert.Contains(t, err.Error(), c.refusal)
}

const placement = `
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata: {namespace: default}
`

const cluster = `
apiVersion: cluster.open-cluster-management.io/v1
kind: ManagedCluster
`

const work = `
apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {namespace: default}
`

const replicaset = `
apiVersion: work.open-cluster-management.io/v1alpha1
kind: ManifestWorkReplicaSet
metadata: {namespace: default}
spec:
  manifestWorkTemplate: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}]}}
`

const cma = `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
`

const adc = `
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata: {namespace: default}
`

const configpolicy = `
apiVersion: policy.open-cluster-management.io/v1
kind: ConfigurationPolicy
metadata: {namespace: default}
`

const certpolicy = `
apiVersion: policy.open-cluster-management.io/v1
kind: CertificatePolicy
metadata: {namespace: default}
`

const operatorpolicy = `
apiVersion: policy.open-cluster-management.io/v1beta1
kind: OperatorPolicy
metadata: {namespace: default}
`

// rollout returns the placementRefs (MWRS) or installStrategy (addon) part of
// a document with the given rollout strategy.
func mwrsRollout(strategy string) string {
	return replicaset + "  placementRefs:\n  - name: p\n    rolloutStrategy: " + strategy + "\n"
}

func cmaRollout(strategy string) string {
	return cma + "spec:\n  installStrategy:\n    type: Placements\n    placements:\n    - {name: p, namespace: default, rolloutStrategy: " + strategy + "}\n"
}

func TestAdmissionPlacement(t *testing.T) {
	for _, c := range []admissionCase{
		{"over int32", placements, placement + "spec: {numberOfClusters: 2147483648}", "spec.numberOfClusters must be between 0 and 2147483647"},
		{"negative", placements, placement + "spec: {numberOfClusters: -1}", "spec.numberOfClusters"},
		{"zero selects none", placements, placement + "spec: {numberOfClusters: 0}", ""},
		{"int32 max", placements, placement + "spec: {numberOfClusters: 2147483647}", ""},
		{"unset", placements, placement + "spec: {}", ""},
		{"operator Bogus", placements, placement + "spec: {tolerations: [{key: k, operator: Bogus}]}", "spec.tolerations[].operator must be Exists or Equal"},
		{"operator Exists", placements, placement + "spec: {tolerations: [{key: k, operator: Exists, tolerationSeconds: 0}]}", ""},
		{"operator default", placements, placement + "spec: {tolerations: [{key: k, value: v}]}", ""},
		{"negative tolerationSeconds", placements, placement + "spec: {tolerations: [{key: k, operator: Exists, tolerationSeconds: -5}]}", "spec.tolerations[].tolerationSeconds"},
		{"cluster set with space", placements, placement + "spec: {clusterSets: [prod, 'not a set']}", "spec.clusterSets"},
		{"cluster set upper case", placements, placement + "spec: {clusterSets: [Prod]}", "spec.clusterSets"},
		{"cluster set empty", placements, placement + "spec: {clusterSets: ['']}", "spec.clusterSets"},
		{"cluster set too long", placements, placement + "spec: {clusterSets: [" + strings.Repeat("a", 254) + "]}", "spec.clusterSets"},
		{"cluster sets", placements, placement + "spec: {clusterSets: [default, global, team-a.prod]}", ""},
		{"maxSkew over int32", placements, placement + "spec: {spreadPolicy: {spreadConstraints: [{topologyKey: k, topologyKeyType: Label, maxSkew: 2147483648}]}}", "spec.spreadPolicy.spreadConstraints[].maxSkew"},
		{"clustersPerDecisionGroup over int32", placements, placement + "spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 2147483648}}}", "clustersPerDecisionGroup"},
		{"clustersPerDecisionGroup negative", placements, placement + "spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: -1}}}", "clustersPerDecisionGroup"},
		{"clustersPerDecisionGroup zero is the default", placements, placement + "spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 0}}}", ""},
		{"clustersPerDecisionGroup number", placements, placement + "spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 3}}}", ""},
		{"clustersPerDecisionGroup percent", placements, placement + "spec: {decisionStrategy: {groupStrategy: {clustersPerDecisionGroup: 25%}}}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

func TestAdmissionManagedCluster(t *testing.T) {
	for _, c := range []admissionCase{
		{"lease -1", clusters, cluster + "spec: {leaseDurationSeconds: -1}", "spec.leaseDurationSeconds must be between 0 and 86400"},
		{"lease over a day", clusters, cluster + "spec: {leaseDurationSeconds: 86401}", "spec.leaseDurationSeconds"},
		{"lease over int32", clusters, cluster + "spec: {leaseDurationSeconds: 2147483648}", "spec.leaseDurationSeconds"},
		{"lease 0 means 60", clusters, cluster + "spec: {leaseDurationSeconds: 0}", ""},
		{"lease 60", clusters, cluster + "spec: {leaseDurationSeconds: 60}", ""},
		{"url not a url", clusters, cluster + "spec: {managedClusterClientConfigs: [{url: not a url}]}", "spec.managedClusterClientConfigs[].url"},
		{"url relative", clusters, cluster + "spec: {managedClusterClientConfigs: [{url: /api}]}", "spec.managedClusterClientConfigs[].url"},
		{"url ftp", clusters, cluster + "spec: {managedClusterClientConfigs: [{url: 'ftp://h:21'}]}", "spec.managedClusterClientConfigs[].url"},
		{"url without host", clusters, cluster + "spec: {managedClusterClientConfigs: [{url: 'https://'}]}", "spec.managedClusterClientConfigs[].url"},
		{"url https", clusters, cluster + "spec: {managedClusterClientConfigs: [{url: 'https://api.c1.example.com:6443'}, {url: 'http://10.0.0.1:8080'}]}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

func TestAdmissionManifestWork(t *testing.T) {
	m := "spec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}]}"
	for _, c := range []admissionCase{
		{"negative ttl", works, work + m + ", deleteOption: {ttlSecondsAfterFinished: -1}}", "spec.deleteOption.ttlSecondsAfterFinished"},
		{"ttl zero", works, work + m + ", deleteOption: {ttlSecondsAfterFinished: 0}}", ""},
		{"no ttl", works, work + m + "}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

func TestAdmissionRolloutStrategies(t *testing.T) {
	for _, kind := range []struct {
		name  string
		gvr   schema.GroupVersionResource
		doc   func(string) string
		where string
	}{
		{"ManifestWorkReplicaSet", replicasets, mwrsRollout, "spec.placementRefs[].rolloutStrategy"},
		{"ClusterManagementAddOn", cmas, cmaRollout, "spec.installStrategy.placements[].rolloutStrategy"},
	} {
		t.Run(kind.name, func(t *testing.T) {
			for _, c := range []admissionCase{
				{"maxFailures over int32", kind.gvr, kind.doc("{type: All, all: {maxFailures: 2147483648}}"), kind.where + ".{all,progressive,progressivePerGroup}.maxFailures"},
				{"maxFailures negative", kind.gvr, kind.doc("{type: ProgressivePerGroup, progressivePerGroup: {maxFailures: -1}}"), "maxFailures"},
				{"maxConcurrency over int32", kind.gvr, kind.doc("{type: Progressive, progressive: {maxConcurrency: 2147483648}}"), kind.where + ".progressive.maxConcurrency"},
				{"groupIndex over int32", kind.gvr, kind.doc("{type: Progressive, progressive: {mandatoryDecisionGroups: [{groupIndex: 2147483648}]}}"), "mandatoryDecisionGroups[].groupIndex"},
				{"minSuccessTime bogus", kind.gvr, kind.doc("{type: All, all: {minSuccessTime: bogus}}"), kind.where + ".{all,progressive,progressivePerGroup}.minSuccessTime"},
				{"minSuccessTime overflow", kind.gvr, kind.doc("{type: All, all: {minSuccessTime: 99999999999h}}"), "minSuccessTime"},
				{"progressDeadline trailing junk", kind.gvr, kind.doc("{type: All, all: {progressDeadline: 5hjunk}}"), "progressDeadline"},
				{"good progressive", kind.gvr, kind.doc("{type: Progressive, progressive: {maxConcurrency: 25%, maxFailures: 2, minSuccessTime: 90s, progressDeadline: 1h30m, mandatoryDecisionGroups: [{groupIndex: 0}]}}"), ""},
				{"good all", kind.gvr, kind.doc("{type: All, all: {maxFailures: 0, minSuccessTime: '0', progressDeadline: None}}"), ""},
				{"defaults", kind.gvr, kind.doc("{type: All}"), ""},
			} {
				t.Run(c.name, c.run)
			}
		})
	}
	t.Run("ManifestWorkReplicaSet ttl", admissionCase{"negative ttl", replicasets,
		strings.Replace(mwrsRollout("{type: All}"), "{workload:", "{deleteOption: {ttlSecondsAfterFinished: -1}, workload:", 1),
		"spec.manifestWorkTemplate.deleteOption.ttlSecondsAfterFinished"}.run)
}

func TestAdmissionAddOnDeploymentConfig(t *testing.T) {
	res := func(q string) string {
		return adc + "spec: {resourceRequirements: [{containerID: 'deployments:*:*', resources: {requests: {cpu: 100m}, limits: {memory: " + q + "}}}]}"
	}
	for _, c := range []admissionCase{
		{"quantity the Go parser refuses", adcs, res("1e1.5"), "spec.resourceRequirements[].resources.{requests,limits}"},
		{"exponent too large", adcs, res("1e99999999999999999999"), "spec.resourceRequirements[]"},
		{"quantity", adcs, res("128Mi"), ""},
		{"toleration operator Bogus", adcs, adc + "spec: {nodePlacement: {tolerations: [{key: k, operator: Bogus}]}}", "spec.nodePlacement.tolerations[].operator"},
		{"toleration", adcs, adc + "spec: {nodePlacement: {tolerations: [{key: k, operator: Exists, effect: NoSchedule}]}}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

func TestAdmissionConfigurationPolicy(t *testing.T) {
	tmpl := func(extra string) string {
		return configpolicy + "spec:\n  object-templates:\n  - {complianceType: musthave, objectDefinition: {apiVersion: v1, kind: Namespace, metadata: {name: x}}" + extra + "}\n"
	}
	for _, c := range []admissionCase{
		{"remediationAction destroy", configPolicy, configpolicy + "spec: {remediationAction: destroy}", "spec.remediationAction"},
		{"remediationAction INFORM", configPolicy, configpolicy + "spec: {remediationAction: INFORM}", "spec.remediationAction"},
		{"remediationAction Enforce", configPolicy, configpolicy + "spec: {remediationAction: Enforce}", ""},
		{"severity urgent", configPolicy, configpolicy + "spec: {severity: urgent}", "spec.severity"},
		{"severity High", configPolicy, configpolicy + "spec: {severity: High}", ""},
		{"pruneObjectBehavior Everything", configPolicy, configpolicy + "spec: {pruneObjectBehavior: Everything}", "spec.pruneObjectBehavior"},
		{"complianceType mayhave", configPolicy, strings.Replace(tmpl(""), "musthave", "mayhave", 1), "complianceType"},
		{"metadataComplianceType mustnothave", configPolicy, tmpl(", metadataComplianceType: mustnothave"), "metadataComplianceType"},
		{"recordDiff Always", configPolicy, tmpl(", recordDiff: Always"), "recordDiff"},
		{"evaluationInterval soon", configPolicy, configpolicy + "spec: {evaluationInterval: {compliant: soon}}", "spec.evaluationInterval.compliant"},
		{"evaluationInterval 1x5m", configPolicy, configpolicy + "spec: {evaluationInterval: {compliant: 1x5m}}", "spec.evaluationInterval.compliant"},
		{"evaluationInterval 10mnever", configPolicy, configpolicy + "spec: {evaluationInterval: {noncompliant: 10mnever}}", "spec.evaluationInterval.noncompliant"},
		{"evaluationInterval overflow", configPolicy, configpolicy + "spec: {evaluationInterval: {noncompliant: 99999999999h}}", "spec.evaluationInterval.noncompliant"},
		{"evaluationInterval parts", configPolicy, configpolicy + "spec: {evaluationInterval: {compliant: 1h30m15s, noncompliant: 1.5h}}", ""},
		{"good", configPolicy, tmpl(", recordDiff: InStatus, metadataComplianceType: MustOnlyHave") + "  remediationAction: enforce\n  severity: critical\n  pruneObjectBehavior: DeleteIfCreated\n  evaluationInterval: {compliant: 10m, noncompliant: never}\n", ""},
	} {
		t.Run(c.name, c.run)
	}
}

// CertificatePolicy durations are Go durations that always parse; the
// OperatorPolicy enums are upstream's.
func TestAdmissionCertificateAndOperatorPolicy(t *testing.T) {
	sub := "subscription: {name: p, namespace: ns, source: s, sourceNamespace: m}"
	for _, c := range []admissionCase{
		{"minimumDuration 30d", certPolicy, certpolicy + "spec: {minimumDuration: 30d}", "spec.minimumDuration"},
		{"minimumCADuration negative", certPolicy, certpolicy + "spec: {minimumCADuration: -5h}", "spec.minimumCADuration"},
		{"maximumDuration overflow", certPolicy, certpolicy + "spec: {maximumDuration: 99999999999h}", "spec.maximumDuration"},
		{"maximumCADuration four parts", certPolicy, certpolicy + "spec: {maximumCADuration: 1h1m1s1ms}", "spec.maximumCADuration"},
		{"empty SAN pattern", certPolicy, certpolicy + "spec: {allowedSANPattern: ''}", "spec.allowedSANPattern"},
		{"severity urgent", certPolicy, certpolicy + "spec: {severity: urgent}", "spec.severity"},
		{"good durations", certPolicy, certpolicy + "spec: {minimumDuration: 300h, minimumCADuration: 1.5h, maximumDuration: 2h45m30s, maximumCADuration: 87600h87600h, namespaceSelector: {include: [default]}}", ""},
		{"operator complianceType mustonlyhave", opPolicy, operatorpolicy + "spec: {complianceType: mustonlyhave, upgradeApproval: None, " + sub + "}", "spec.complianceType"},
		{"operator upgradeApproval Manual", opPolicy, operatorpolicy + "spec: {complianceType: musthave, upgradeApproval: Manual, " + sub + "}", "spec.upgradeApproval"},
		{"operator no subscription", opPolicy, operatorpolicy + "spec: {complianceType: musthave, upgradeApproval: None}", "spec.subscription"},
		{"operator removal Everything", opPolicy, operatorpolicy + "spec: {complianceType: mustnothave, upgradeApproval: None, removalBehavior: {subscriptions: Everything}, " + sub + "}", "spec.removalBehavior.subscriptions"},
		{"operator good", opPolicy, operatorpolicy + "spec: {complianceType: musthave, upgradeApproval: Automatic, versions: [p.v1], " + sub + "}", ""},
	} {
		t.Run(c.name, c.run)
	}
}

// Status writers (the hub, the work agents) cannot store a status that the
// hub's informers could not decode.
func TestAdmissionStatus(t *testing.T) {
	for _, c := range []struct {
		name, doc, status, refusal string
		gvr                        schema.GroupVersionResource
	}{
		{"work ordinal over int32", work + "spec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}]}}",
			"{resourceStatus: {manifests: [{resourceMeta: {ordinal: 2147483648}, conditions: []}]}}", "status.resourceStatus.manifests[].resourceMeta.ordinal", works},
		{"work ordinal ok", work + "spec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: default}}]}}",
			"{resourceStatus: {manifests: [{resourceMeta: {ordinal: 0}, conditions: []}]}}", "", works},
		{"placement selected over int32", placement + "spec: {}", "{numberOfSelectedClusters: 2147483648}", "status.numberOfSelectedClusters", placements},
		{"placement group count negative", placement + "spec: {}", "{numberOfSelectedClusters: 1, decisionGroups: [{decisionGroupIndex: 0, clusterCount: -1}]}", "status.decisionGroups[]", placements},
		{"cluster capacity the Go parser refuses", cluster + "spec: {}", "{capacity: {cpu: '1e1.5'}}", "status.capacity: every value must be a Kubernetes quantity", clusters},
		{"cluster allocatable the Go parser refuses", cluster + "spec: {}", "{allocatable: {memory: '1e99999999999999999999'}}", "status.allocatable: every value must be a Kubernetes quantity", clusters},
		{"cluster capacity ok", cluster + "spec: {}", "{capacity: {cpu: 4, memory: 16Gi}, allocatable: {cpu: 3500m}}", "", clusters},
		{"placement ok", placement + "spec: {}", "{numberOfSelectedClusters: 1, decisionGroups: [{decisionGroupIndex: 0, decisionGroupName: '', decisions: [], clusterCount: 1}]}", "", placements},
	} {
		t.Run(c.name, func(t *testing.T) {
			obj := object(t, c.doc)
			created, err := dyn.Resource(c.gvr).Namespace(obj.GetNamespace()).Create(ctx(t), obj, metav1.CreateOptions{})
			require.NoError(t, err)
			var status map[string]any
			require.NoError(t, yaml.Unmarshal([]byte(c.status), &status))
			created.Object["status"] = status
			_, err = dyn.Resource(c.gvr).Namespace(obj.GetNamespace()).UpdateStatus(ctx(t), created, metav1.UpdateOptions{})
			if c.refusal == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
			assert.Contains(t, err.Error(), c.refusal)
		})
	}
}

// Regression (issue 20): with only the control plane and the manifests, no hub
// process, a Placement whose numberOfClusters does not fit an int32 is refused
// at create, so the hub's Placement informer can never meet it.
func TestNumberOfClustersOverInt32RefusedWithoutHub(t *testing.T) {
	obj := object(t, placement+"spec: {numberOfClusters: 2147483648}")
	_, err := dyn.Resource(placements).Namespace("default").Create(ctx(t), obj, metav1.CreateOptions{})
	require.Error(t, err)
	t.Logf("refused: %v", err)
	assert.True(t, apierrors.IsInvalid(err), "want Invalid, got %v", err)
	assert.Contains(t, err.Error(), "ValidatingAdmissionPolicy 'flotilla-placements'")
	assert.Contains(t, err.Error(), "spec.numberOfClusters must be between 0 and 2147483647")
	assert.Contains(t, err.Error(), "2147483648")

	// The same value cannot come in through an update either.
	good, err := dyn.Resource(placements).Namespace("default").Create(ctx(t), object(t, placement+"spec: {numberOfClusters: 1}"), metav1.CreateOptions{})
	require.NoError(t, err)
	require.NoError(t, unstructured.SetNestedField(good.Object, int64(2147483648), "spec", "numberOfClusters"))
	_, err = dyn.Resource(placements).Namespace("default").Update(ctx(t), good, metav1.UpdateOptions{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "spec.numberOfClusters")

	// Every stored Placement still decodes into the typed list the hub reads.
	list, err := dyn.Resource(placements).Namespace("").List(ctx(t), metav1.ListOptions{})
	require.NoError(t, err)
	for _, p := range list.Items {
		n, found, err := unstructured.NestedInt64(p.Object, "spec", "numberOfClusters")
		require.NoError(t, err)
		if found {
			assert.LessOrEqual(t, n, int64(2147483647), p.GetName())
		}
	}
}

// Every embedded policy compiles against the CRD schemas it matches: the
// apiserver's type checker reports no warning for any of them.
func TestAdmissionPoliciesTypeCheck(t *testing.T) {
	a, err := manifests.AdmissionPolicies(manifests.HubCRDs, manifests.KlusterletCRDs, manifests.PolicyCRDs)
	require.NoError(t, err)
	client := kubernetes.NewForConfigOrDie(cpConfig)
	for _, p := range a.Policies {
		t.Run(p.Name, func(t *testing.T) {
			require.EventuallyWithT(t, func(c *assert.CollectT) {
				got, err := client.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(context.Background(), p.Name, metav1.GetOptions{})
				require.NoError(c, err)
				require.Equal(c, got.Generation, got.Status.ObservedGeneration, "not type-checked yet")
				require.NotNil(c, got.Status.TypeChecking, "not type-checked yet")
				assert.Empty(c, got.Status.TypeChecking.ExpressionWarnings)
			}, time.Minute, 200*time.Millisecond)
		})
	}

	// The check above can fail: a policy naming a field the schema lacks is reported.
	broken := a.Policies[0].DeepCopy()
	broken.ObjectMeta = metav1.ObjectMeta{Name: "flotilla-test-broken"}
	broken.Spec.Validations = broken.Spec.Validations[:1]
	broken.Spec.Validations[0].Expression = "object.spec.noSuchField > 0"
	broken.Spec.Validations[0].MessageExpression = ""
	broken.Spec.Validations[0].Message = "broken"
	policies := client.AdmissionregistrationV1().ValidatingAdmissionPolicies()
	_, err = policies.Create(ctx(t), broken, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = policies.Delete(context.Background(), broken.Name, metav1.DeleteOptions{}) })
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		got, err := policies.Get(context.Background(), broken.Name, metav1.GetOptions{})
		require.NoError(c, err)
		require.NotNil(c, got.Status.TypeChecking)
		require.NotEmpty(c, got.Status.TypeChecking.ExpressionWarnings)
		assert.Contains(c, got.Status.TypeChecking.ExpressionWarnings[0].Warning, "noSuchField")
	}, time.Minute, 200*time.Millisecond)
}

// int64 fields need no policy: the apiserver itself refuses an integer outside
// the int64 range (or a fraction) for a `type: integer` field, so only int32,
// int-or-string, duration and quantity fields are bounded by the policies.
func TestInt64FieldsBoundedByTheAPIServer(t *testing.T) {
	rc := kubernetes.NewForConfigOrDie(cpConfig).CoreV1().RESTClient()
	for n, admitted := range map[string]bool{"9223372036854775807": true, "9223372036854775808": false, "1e19": false, "1.5": false} {
		name := fmt.Sprintf("int64-%d", seq.Add(1))
		body := `{"apiVersion":"work.open-cluster-management.io/v1","kind":"ManifestWork","metadata":{"name":"` + name + `","namespace":"default"},` +
			`"spec":{"workload":{"manifests":[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"default"}}]},"deleteOption":{"propagationPolicy":"Foreground","ttlSecondsAfterFinished":` + n + `}}}`
		err := rc.Post().AbsPath("/apis/work.open-cluster-management.io/v1/namespaces/default/manifestworks").
			SetHeader("Content-Type", "application/json").Body([]byte(body)).Do(ctx(t)).Error()
		if admitted {
			assert.NoError(t, err, n)
			continue
		}
		if assert.Error(t, err, n) {
			assert.True(t, apierrors.IsInvalid(err), "%s: %v", n, err)
			assert.Contains(t, err.Error(), "spec.deleteOption.ttlSecondsAfterFinished", n)
		}
	}
}

// An object stored before the policies held it (here: planted while the binding
// was removed) can still be deleted: a write to an object that carries a
// deletionTimestamp is not judged, so its finalizers can go. Until it is being
// deleted, any other write is refused while the bad value stays.
func TestStoredBadObjectCanStillBeDeleted(t *testing.T) {
	client := kubernetes.NewForConfigOrDie(cpConfig)
	bindings := client.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings()
	require.NoError(t, bindings.Delete(ctx(t), "flotilla-placements", metav1.DeleteOptions{}))
	t.Cleanup(func() {
		require.NoError(t, manifests.InstallAdmission(context.Background(), cpConfig, manifests.HubCRDs))
	})
	bad := object(t, placement+"spec: {numberOfClusters: 2147483648}")
	bad.SetFinalizers([]string{"flotilla.dev/test"})
	require.Eventually(t, func() bool {
		_, err := dyn.Resource(placements).Namespace("default").Create(ctx(t), bad.DeepCopy(), metav1.CreateOptions{})
		return err == nil
	}, 30*time.Second, 100*time.Millisecond, "the removal of the binding takes effect")
	require.NoError(t, manifests.InstallAdmission(ctx(t), cpConfig, manifests.HubCRDs))

	api := dyn.Resource(placements).Namespace("default")
	stored, err := api.Get(ctx(t), bad.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	stored.SetLabels(map[string]string{"touched": "yes"})
	_, err = api.Update(ctx(t), stored, metav1.UpdateOptions{})
	require.Error(t, err, "a write that keeps the bad value")
	assert.Contains(t, err.Error(), "spec.numberOfClusters")

	require.NoError(t, api.Delete(ctx(t), bad.GetName(), metav1.DeleteOptions{}))
	stored, err = api.Get(ctx(t), bad.GetName(), metav1.GetOptions{})
	require.NoError(t, err)
	require.NotNil(t, stored.GetDeletionTimestamp())
	stored.SetFinalizers(nil)
	_, err = api.Update(ctx(t), stored, metav1.UpdateOptions{})
	require.NoError(t, err, "dropping the finalizer of an object being deleted")
	_, err = api.Get(ctx(t), bad.GetName(), metav1.GetOptions{})
	assert.True(t, apierrors.IsNotFound(err), "the bad Placement is gone: %v", err)
}
