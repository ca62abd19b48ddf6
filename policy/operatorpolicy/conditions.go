package operatorpolicy

import (
	"fmt"
	"slices"
	"strings"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// Condition types, as upstream's.
const (
	CompliantType     = "Compliant"
	ValidSpecType     = "ValidPolicySpec"
	OperatorGroupType = "OperatorGroupCompliant"
	SubscriptionType  = "SubscriptionCompliant"
	InstallPlanType   = "InstallPlanCompliant"
	CSVType           = "ClusterServiceVersionCompliant"
	CRDType           = "CustomResourceDefinitionCompliant"
	DeploymentType    = "DeploymentCompliant"
	CatalogSourceType = "CatalogSourcesUnhealthy"
)

// Kinds the conditions are about.
const (
	kindOperatorGroup = "OperatorGroup"
	kindSubscription  = "Subscription"
	kindInstallPlan   = "InstallPlan"
	kindCSV           = "ClusterServiceVersion"
	kindCRD           = "CustomResourceDefinition"
	kindDeployment    = "Deployment"
	kindCatalogSource = "CatalogSource"
)

// NoOLMMessage is the compliance message where the cluster does not serve
// OLM's APIs.
const NoOLMMessage = "the Operator Lifecycle Manager (OLM) is not installed on the cluster: its APIs " +
	"(operators.coreos.com Subscription, OperatorGroup, InstallPlan, ClusterServiceVersion) are not served"

func condType(kind string) string {
	switch kind {
	case kindOperatorGroup:
		return OperatorGroupType
	case kindSubscription:
		return SubscriptionType
	case kindInstallPlan:
		return InstallPlanType
	case kindCSV:
		return CSVType
	case kindCRD:
		return CRDType
	case kindDeployment:
		return DeploymentType
	default:
		return CatalogSourceType
	}
}

func cond(typ string, ok bool, reason, msg string) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg}
}

func invalidCausingUnknown(kind string) metav1.Condition {
	return metav1.Condition{Type: condType(kind), Status: metav1.ConditionUnknown, Reason: "InvalidPolicySpec",
		Message: "the status of the " + kind + " could not be determined because the policy is invalid"}
}

func missingWanted(kind string) metav1.Condition {
	return cond(condType(kind), false, kind+"Missing", "the "+kind+" required by the policy was not found")
}

func missingNotWanted(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"NotPresent", "the "+kind+" is not present")
}

func identified(kind, one, many string, ids []string) string {
	switch len(ids) {
	case 0:
		return kind + " " + one
	case 1:
		return fmt.Sprintf("%s (%s) %s", kind, ids[0], one)
	}
	return fmt.Sprintf("%ss (%s) %s", kind, strings.Join(ids, ", "), many)
}

func foundNotWanted(kind string, ids ...string) metav1.Condition {
	return cond(condType(kind), false, kind+"Present", "the "+identified(kind, "is", "are", ids)+" present")
}

func created(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"Created", "the "+kind+" required by the policy was created")
}

func deleted(kind string, ids ...string) metav1.Condition {
	return cond(condType(kind), true, kind+"Deleted", "the "+identified(kind, "was", "were", ids)+" deleted")
}

func kept(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"Kept", "the policy specifies to keep the "+kind)
}

func matches(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"Matches", "the "+kind+" matches what is required by the policy")
}

func mismatch(kind string) metav1.Condition {
	return cond(condType(kind), false, kind+"Mismatch", "the "+kind+" found on the cluster does not match the policy")
}

func updated(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"Updated", "the "+kind+" was updated to match the policy")
}

func notApplicable(kind string) metav1.Condition {
	return cond(condType(kind), true, kind+"NotApplicable", "MustNotHave policies ignore kind "+kind)
}

var (
	validSpec           = cond(ValidSpecType, true, "PolicyValidated", "the policy spec is valid")
	opGroupPreexisting  = cond(OperatorGroupType, true, "PreexistingOperatorGroupFound", "the policy does not specify an OperatorGroup but one already exists in the namespace - assuming that OperatorGroup is correct")
	opGroupTooMany      = cond(OperatorGroupType, false, "TooManyOperatorGroups", "there is more than one OperatorGroup in the namespace")
	noInstallPlans      = cond(InstallPlanType, true, "NoInstallPlansFound", "there are no relevant InstallPlans in the namespace")
	installPlanFailed   = cond(InstallPlanType, false, "InstallPlanFailed", "the current InstallPlan has failed")
	installPlanInstalls = cond(InstallPlanType, false, "InstallPlansInstalling", "a relevant InstallPlan is actively installing")
	installPlansNone    = cond(InstallPlanType, true, "NoInstallPlansRequiringApproval", "no InstallPlans requiring approval were found")
	noCSV               = cond(CSVType, false, "RelevantCSVNotFound", "a relevant installed ClusterServiceVersion could not be found")
	noCRD               = cond(CRDType, true, "RelevantCRDNotFound", "no CRDs were found for the operator")
	crdFound            = cond(CRDType, true, "RelevantCRDFound", "there are CRDs present for the operator")
	noDeployments       = cond(DeploymentType, true, "NoRelevantDeployments", "there are no relevant deployments because the ClusterServiceVersion is missing")
)

func invalidSpec(msgs []string) metav1.Condition {
	return cond(ValidSpecType, false, "InvalidPolicySpec", strings.Join(msgs, ", "))
}

func installPlanUpgrade(cfg policyv1beta1.ComplianceConfigAction, inPlan, needApproval []string) metav1.Condition {
	inPlan, needApproval = slices.Sorted(slices.Values(inPlan)), slices.Sorted(slices.Values(needApproval))
	msg := fmt.Sprintf("an InstallPlan to update to [%s] is available for approval", strings.Join(inPlan, ", "))
	if len(needApproval) > 0 {
		msg += fmt.Sprintf(" but approval for [%v] is required", strings.Join(needApproval, ", "))
	}
	return cond(InstallPlanType, cfg == policyv1beta1.ConfigCompliant, "InstallPlanRequiresApproval", msg)
}

func installPlanApproved(version string) metav1.Condition {
	return cond(InstallPlanType, true, "InstallPlanApproved", fmt.Sprintf("the InstallPlan for %v was approved", version))
}

func allowedCSV(csv *operatorsv1alpha1.ClusterServiceVersion) metav1.Condition {
	return cond(CSVType, csv.Status.Phase == operatorsv1alpha1.CSVPhaseSucceeded, string(csv.Status.Reason),
		"ClusterServiceVersion ("+csv.Name+") - "+csv.Status.Message)
}

func disallowedCSV(csv *operatorsv1alpha1.ClusterServiceVersion) metav1.Condition {
	return cond(CSVType, false, "UnapprovedVersion", "ClusterServiceVersion ("+csv.Name+") is not an approved version")
}

func deploymentCond(cfg policyv1beta1.ComplianceConfigAction, exist bool, unavailable []string) metav1.Condition {
	ok, reason, msg := true, "DeploymentsAvailable", "all operator Deployments have their minimum availability"
	if !exist {
		reason, msg = "NoExistingDeployments", "no existing operator Deployments"
	}
	if len(unavailable) > 0 {
		ok, reason = false, "DeploymentsUnavailable"
		msg = fmt.Sprintf("the deployments %s do not have their minimum availability", strings.Join(unavailable, ", "))
	}
	if !ok && cfg == policyv1beta1.ConfigCompliant {
		ok = true
	}
	return cond(DeploymentType, ok, reason, msg)
}

// catalogSourceCond has upstream's reversed polarity: True means unhealthy.
func catalogSourceCond(cfg policyv1beta1.ComplianceConfigAction, unhealthy, missing bool, name string) metav1.Condition {
	bad, reason, msg := false, "CatalogSourcesFound", "CatalogSource was found"
	if unhealthy {
		bad, reason, msg = true, "CatalogSourcesFoundUnhealthy", "CatalogSource was found but is unhealthy"
	}
	if missing {
		bad, reason, msg = true, "CatalogSourcesNotFound", "CatalogSource '"+name+"' was not found"
	}
	if bad && cfg == policyv1beta1.ConfigCompliant {
		bad = false
	}
	return cond(CatalogSourceType, bad, reason, msg)
}
