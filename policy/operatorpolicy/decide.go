package operatorpolicy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	policyv1beta1 "flotilla.dev/flotilla/api/policy/v1beta1"
)

// Desired is what a policy's spec asks for, parsed.
type Desired struct {
	// Subscription to have (name, namespace, the spec fields the policy sets).
	Subscription *operatorsv1alpha1.Subscription
	// OperatorGroup the policy names; nil when it names none.
	OperatorGroup *operatorsv1.OperatorGroup
	// Invalid lists what is wrong with the spec (empty: valid).
	Invalid []string
}

// subscriptionFields are the fields spec.subscription may hold.
type subscriptionFields struct {
	Name                   string                                `json:"name"`
	Namespace              string                                `json:"namespace,omitempty"`
	Channel                string                                `json:"channel,omitempty"`
	CatalogSource          string                                `json:"source,omitempty"`
	CatalogSourceNamespace string                                `json:"sourceNamespace,omitempty"`
	StartingCSV            string                                `json:"startingCSV,omitempty"`
	InstallPlanApproval    string                                `json:"installPlanApproval,omitempty"`
	Config                 *operatorsv1alpha1.SubscriptionConfig `json:"config,omitempty"`
}

type operatorGroupFields struct {
	Name      string `json:"name,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	operatorsv1.OperatorGroupSpec
}

// Parse reads the policy's spec; subscription is spec.subscription with its
// managed-cluster templates resolved (JSON).
func Parse(p *policyv1beta1.OperatorPolicy, subscription []byte) Desired {
	var d Desired
	var s subscriptionFields
	dec := json.NewDecoder(bytes.NewReader(subscription))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		d.Invalid = append(d.Invalid, "spec.subscription is invalid: "+err.Error())
		return d
	}
	var og *operatorGroupFields
	if p.Spec.OperatorGroup != nil && len(p.Spec.OperatorGroup.Raw) > 0 {
		og = &operatorGroupFields{}
		dec := json.NewDecoder(bytes.NewReader(p.Spec.OperatorGroup.Raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(og); err != nil {
			d.Invalid = append(d.Invalid, "spec.operatorGroup is invalid: "+err.Error())
		}
	}
	if s.Namespace == "" && og != nil {
		s.Namespace = og.Namespace
	}
	switch {
	case s.Name == "":
		d.Invalid = append(d.Invalid, "name is required in spec.subscription")
	case s.Namespace == "":
		d.Invalid = append(d.Invalid, "namespace is required in spec.subscription")
	}
	if s.InstallPlanApproval != "" {
		d.Invalid = append(d.Invalid, "installPlanApproval is prohibited in spec.subscription")
	}
	if s.CatalogSource == "" || s.CatalogSourceNamespace == "" {
		d.Invalid = append(d.Invalid, "source and sourceNamespace are required in spec.subscription")
	}
	if og != nil {
		if og.Namespace != "" && og.Namespace != s.Namespace {
			d.Invalid = append(d.Invalid, "the namespace specified in spec.operatorGroup ('"+og.Namespace+
				"') must match the namespace used for the subscription ('"+s.Namespace+"')")
		}
		d.OperatorGroup = &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: og.Name, Namespace: s.Namespace}, Spec: og.OperatorGroupSpec}
		if og.Name == "" {
			d.Invalid = append(d.Invalid, "name is required in spec.operatorGroup")
		}
	}
	if p.Spec.UpgradeApproval != "None" && p.Spec.UpgradeApproval != "Automatic" {
		d.Invalid = append(d.Invalid, "spec.upgradeApproval must be None or Automatic")
	}
	d.Subscription = &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: s.Namespace},
		Spec: &operatorsv1alpha1.SubscriptionSpec{Package: s.Name, Channel: s.Channel, CatalogSource: s.CatalogSource,
			CatalogSourceNamespace: s.CatalogSourceNamespace, StartingCSV: s.StartingCSV, Config: s.Config},
	}
	return d
}

// Facts are what the cluster holds, read by the runner.
type Facts struct {
	// OLM: the cluster serves OLM's APIs.
	OLM bool
	// OperatorGroups in the Subscription's namespace.
	OperatorGroups []operatorsv1.OperatorGroup
	// Subscription found (nil: none).
	Subscription *operatorsv1alpha1.Subscription
	// OtherSubscriptions counts the other Subscriptions of the namespace.
	OtherSubscriptions int
	// InstallPlans of the namespace.
	InstallPlans []operatorsv1alpha1.InstallPlan
	// CSV the Subscription installed (nil: none found).
	CSV *operatorsv1alpha1.ClusterServiceVersion
	// Deployments of the CSV's install strategy found in the namespace.
	Deployments []appsv1.Deployment
	// CRDs the CSV owns that exist.
	CRDs []string
	// CatalogSource the Subscription names (nil: missing).
	CatalogSource *operatorsv1alpha1.CatalogSource
}

// Verb is what an action does.
type Verb string

// Actions enforce takes.
const (
	Create  Verb = "create"
	Update  Verb = "update"
	Approve Verb = "approve"
	Delete  Verb = "delete"
)

// Action is one change enforce makes.
type Action struct {
	Verb   Verb
	Object client.Object
}

// Decision is the verdict on one policy.
type Decision struct {
	// Conditions, sorted by type, the Compliant one included.
	Conditions []metav1.Condition
	// Compliance and Message ("<State>; <condition messages>").
	Compliance policyv1.ComplianceState
	Message    string
	// Actions to take (enforce only).
	Actions []Action
	// Related are the objects looked at.
	Related []policyv1.RelatedObject
}

// Decide is the verdict on p: its conditions in upstream's wording, its
// compliance, and for enforce the actions that make it so.
func Decide(p *policyv1beta1.OperatorPolicy, d Desired, f Facts) Decision {
	var dec Decision
	if !f.OLM {
		dec.Conditions = []metav1.Condition{cond(CompliantType, false, "NonCompliant", "NonCompliant; "+NoOLMMessage)}
		dec.Compliance, dec.Message = policyv1.NonCompliant, "NonCompliant; "+NoOLMMessage
		return dec
	}
	if len(d.Invalid) > 0 {
		dec.Conditions = []metav1.Condition{invalidSpec(d.Invalid)}
		for _, k := range []string{kindOperatorGroup, kindSubscription, kindInstallPlan, kindCSV, kindCRD, kindDeployment, kindCatalogSource} {
			dec.Conditions = append(dec.Conditions, invalidCausingUnknown(k))
		}
		return finish(dec, p)
	}
	enforce := p.Spec.RemediationAction.IsEnforce()
	dec.Conditions = append(dec.Conditions, validSpec)
	if p.Spec.ComplianceType.Normalize() == policyv1.MustNotHave {
		decideAbsent(&dec, p, d, f, enforce)
	} else {
		decidePresent(&dec, p, d, f, enforce)
	}
	return finish(dec, p)
}

func decidePresent(dec *Decision, p *policyv1beta1.OperatorPolicy, d Desired, f Facts, enforce bool) {
	cfg := p.Spec.ComplianceConfig
	// OperatorGroup.
	switch {
	case d.OperatorGroup != nil:
		var found *operatorsv1.OperatorGroup
		for i := range f.OperatorGroups {
			if f.OperatorGroups[i].Name == d.OperatorGroup.Name {
				found = &f.OperatorGroups[i]
			}
		}
		switch {
		case found == nil && len(f.OperatorGroups) > 0:
			dec.add(opGroupTooMany, kindOperatorGroup, f.OperatorGroups[0].Namespace, f.OperatorGroups[0].Name)
		case found == nil && enforce:
			dec.Actions = append(dec.Actions, Action{Create, d.OperatorGroup.DeepCopy()})
			dec.add(created(kindOperatorGroup), kindOperatorGroup, d.OperatorGroup.Namespace, d.OperatorGroup.Name)
		case found == nil:
			dec.add(missingWanted(kindOperatorGroup), kindOperatorGroup, d.OperatorGroup.Namespace, d.OperatorGroup.Name)
		case !ogMatches(found, d.OperatorGroup):
			if enforce {
				upd := found.DeepCopy()
				upd.Spec.TargetNamespaces, upd.Spec.Selector = d.OperatorGroup.Spec.TargetNamespaces, d.OperatorGroup.Spec.Selector
				if d.OperatorGroup.Spec.ServiceAccountName != "" {
					upd.Spec.ServiceAccountName = d.OperatorGroup.Spec.ServiceAccountName
				}
				dec.Actions = append(dec.Actions, Action{Update, upd})
				dec.add(updated(kindOperatorGroup), kindOperatorGroup, found.Namespace, found.Name)
			} else {
				dec.add(mismatch(kindOperatorGroup), kindOperatorGroup, found.Namespace, found.Name)
			}
		default:
			dec.add(matches(kindOperatorGroup), kindOperatorGroup, found.Namespace, found.Name)
		}
	case len(f.OperatorGroups) == 1:
		dec.add(opGroupPreexisting, kindOperatorGroup, f.OperatorGroups[0].Namespace, f.OperatorGroups[0].Name)
	case len(f.OperatorGroups) > 1:
		dec.add(opGroupTooMany, kindOperatorGroup, d.Subscription.Namespace, "")
	case enforce:
		og := &operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{GenerateName: d.Subscription.Namespace + "-", Namespace: d.Subscription.Namespace}}
		dec.Actions = append(dec.Actions, Action{Create, og})
		dec.add(created(kindOperatorGroup), kindOperatorGroup, d.Subscription.Namespace, "")
	default:
		dec.add(missingWanted(kindOperatorGroup), kindOperatorGroup, d.Subscription.Namespace, "")
	}

	// Subscription.
	sub := f.Subscription
	switch {
	case sub == nil && enforce:
		want := d.Subscription.DeepCopy()
		want.Spec.InstallPlanApproval = operatorsv1alpha1.ApprovalManual
		dec.Actions = append(dec.Actions, Action{Create, want})
		dec.add(created(kindSubscription), kindSubscription, want.Namespace, want.Name)
	case sub == nil:
		dec.add(missingWanted(kindSubscription), kindSubscription, d.Subscription.Namespace, d.Subscription.Name)
	case !subMatches(sub, d.Subscription):
		if enforce {
			upd := sub.DeepCopy()
			mergeSubscription(upd.Spec, d.Subscription.Spec)
			upd.Spec.InstallPlanApproval = operatorsv1alpha1.ApprovalManual
			dec.Actions = append(dec.Actions, Action{Update, upd})
			dec.add(updated(kindSubscription), kindSubscription, sub.Namespace, sub.Name)
		} else {
			dec.add(mismatch(kindSubscription), kindSubscription, sub.Namespace, sub.Name)
		}
	default:
		c := matches(kindSubscription)
		for _, sc := range sub.Status.Conditions {
			if sc.Type == operatorsv1alpha1.SubscriptionResolutionFailed && sc.Status == "True" {
				c = cond(SubscriptionType, false, sc.Reason, sc.Message)
			}
		}
		dec.add(c, kindSubscription, sub.Namespace, sub.Name)
	}

	// InstallPlans.
	dec.Conditions = append(dec.Conditions, decidePlans(dec, p, sub, f.InstallPlans, enforce))

	// ClusterServiceVersion, its CRDs and Deployments.
	switch {
	case f.CSV == nil:
		dec.add(noCSV, kindCSV, d.Subscription.Namespace, "")
		dec.Conditions = append(dec.Conditions, noCRD, noDeployments)
	default:
		if allowed(p.Spec.Versions, f.CSV.Name) {
			dec.add(allowedCSV(f.CSV), kindCSV, f.CSV.Namespace, f.CSV.Name)
		} else {
			dec.add(disallowedCSV(f.CSV), kindCSV, f.CSV.Namespace, f.CSV.Name)
		}
		if len(f.CRDs) > 0 {
			dec.Conditions = append(dec.Conditions, crdFound)
		} else {
			dec.Conditions = append(dec.Conditions, noCRD)
		}
		var unavailable []string
		for _, dep := range f.Deployments {
			if !deploymentAvailable(&dep) {
				unavailable = append(unavailable, dep.Name)
			}
		}
		sort.Strings(unavailable)
		c := deploymentCond(cfg.DeploymentsUnavailable, len(f.Deployments) > 0, unavailable)
		dec.Conditions = append(dec.Conditions, c)
		for _, dep := range f.Deployments {
			dec.related(kindDeployment, "apps/v1", dep.Namespace, dep.Name, deploymentAvailable(&dep) || cfg.DeploymentsUnavailable == policyv1beta1.ConfigCompliant, c.Reason)
		}
	}

	// CatalogSource.
	name := d.Subscription.Spec.CatalogSource
	switch {
	case f.CatalogSource == nil:
		dec.Conditions = append(dec.Conditions, catalogSourceCond(cfg.CatalogSourceUnhealthy, false, true, name))
	default:
		state := ""
		if cs := f.CatalogSource.Status.GRPCConnectionState; cs != nil {
			state = cs.LastObservedState
		}
		dec.Conditions = append(dec.Conditions, catalogSourceCond(cfg.CatalogSourceUnhealthy, state != "READY", false, name))
	}
}

// decidePlans is the InstallPlan condition; enforce approves the plans the
// policy allows: every CSV in it is an allowed version, and upgrades are
// Automatic or nothing is installed yet.
func decidePlans(dec *Decision, p *policyv1beta1.OperatorPolicy, sub *operatorsv1alpha1.Subscription, plans []operatorsv1alpha1.InstallPlan, enforce bool) metav1.Condition {
	if sub == nil {
		return noInstallPlans
	}
	var relevant []operatorsv1alpha1.InstallPlan
	for _, ip := range plans {
		if ownedBy(&ip, sub) || (sub.Status.InstallPlanRef != nil && sub.Status.InstallPlanRef.Name == ip.Name) {
			relevant = append(relevant, ip)
		}
	}
	if len(relevant) == 0 {
		return noInstallPlans
	}
	sort.Slice(relevant, func(i, j int) bool { return relevant[i].Name < relevant[j].Name })
	installing, failed := false, false
	for _, ip := range relevant {
		dec.related(kindInstallPlan, operatorsv1alpha1.SchemeGroupVersion.String(), ip.Namespace, ip.Name, ip.Status.Phase != operatorsv1alpha1.InstallPlanPhaseFailed, string(ip.Status.Phase))
		switch ip.Status.Phase {
		case operatorsv1alpha1.InstallPlanPhaseRequiresApproval:
			if ip.Spec.Approved {
				continue
			}
			var needApproval []string
			shared := ownedByOther(&ip, sub)
			for _, csv := range ip.Spec.ClusterServiceVersionNames {
				// A plan OLM shares with another Subscription of the
				// namespace holds that operator's CSVs too: the policy
				// approves them only when spec.versions lists them.
				if (shared && len(p.Spec.Versions) == 0) || !allowed(p.Spec.Versions, csv) {
					needApproval = append(needApproval, csv)
				}
			}
			initial := sub.Status.InstalledCSV == ""
			if enforce && len(needApproval) == 0 && (p.Spec.UpgradeApproval == "Automatic" || initial) {
				upd := ip.DeepCopy()
				upd.Spec.Approved = true
				dec.Actions = append(dec.Actions, Action{Approve, upd})
				return installPlanApproved(strings.Join(ip.Spec.ClusterServiceVersionNames, ", "))
			}
			return installPlanUpgrade(p.Spec.ComplianceConfig.UpgradesAvailable, ip.Spec.ClusterServiceVersionNames, needApproval)
		case operatorsv1alpha1.InstallPlanPhaseInstalling:
			installing = true
		case operatorsv1alpha1.InstallPlanPhaseFailed:
			failed = sub.Status.InstallPlanRef != nil && sub.Status.InstallPlanRef.Name == ip.Name
		}
	}
	switch {
	case installing:
		return installPlanInstalls
	case failed:
		return installPlanFailed
	}
	return installPlansNone
}

func decideAbsent(dec *Decision, p *policyv1beta1.OperatorPolicy, d Desired, f Facts, enforce bool) {
	rb := p.Spec.RemovalBehavior.WithDefaults()
	// OperatorGroup: only the one the policy names, or the single one of the namespace.
	var og *operatorsv1.OperatorGroup
	for i := range f.OperatorGroups {
		if d.OperatorGroup == nil || f.OperatorGroups[i].Name == d.OperatorGroup.Name {
			og = &f.OperatorGroups[i]
		}
	}
	switch {
	case og == nil:
		dec.Conditions = append(dec.Conditions, missingNotWanted(kindOperatorGroup))
	case rb.OperatorGroups == policyv1beta1.Keep:
		dec.add(kept(kindOperatorGroup), kindOperatorGroup, og.Namespace, og.Name)
	case f.OtherSubscriptions > 0:
		// Used by another Subscription: DeleteIfUnused keeps it.
		dec.add(kept(kindOperatorGroup), kindOperatorGroup, og.Namespace, og.Name)
	case enforce:
		dec.Actions = append(dec.Actions, Action{Delete, og.DeepCopy()})
		dec.add(deleted(kindOperatorGroup, og.Name), kindOperatorGroup, og.Namespace, og.Name)
	default:
		dec.add(foundNotWanted(kindOperatorGroup, og.Name), kindOperatorGroup, og.Namespace, og.Name)
	}
	absent := func(kind string, obj client.Object, action policyv1beta1.RemovalAction) {
		switch {
		case obj == nil:
			dec.Conditions = append(dec.Conditions, missingNotWanted(kind))
		case action == policyv1beta1.Keep:
			dec.add(kept(kind), kind, obj.GetNamespace(), obj.GetName())
		case enforce:
			dec.Actions = append(dec.Actions, Action{Delete, obj})
			dec.add(deleted(kind, obj.GetName()), kind, obj.GetNamespace(), obj.GetName())
		default:
			dec.add(foundNotWanted(kind, obj.GetName()), kind, obj.GetNamespace(), obj.GetName())
		}
	}
	var sub, csv client.Object
	if f.Subscription != nil {
		sub = f.Subscription.DeepCopy()
	}
	if f.CSV != nil {
		csv = f.CSV.DeepCopy()
	}
	absent(kindSubscription, sub, rb.Subscriptions)
	absent(kindCSV, csv, rb.CSVs)
	switch {
	case len(f.CRDs) == 0:
		dec.Conditions = append(dec.Conditions, missingNotWanted(kindCRD))
	case rb.CRDs == policyv1beta1.Keep:
		dec.Conditions = append(dec.Conditions, kept(kindCRD))
	case enforce:
		for _, n := range f.CRDs {
			dec.Actions = append(dec.Actions, Action{Delete, crdObject(n)})
		}
		dec.Conditions = append(dec.Conditions, deleted(kindCRD, f.CRDs...))
	default:
		dec.Conditions = append(dec.Conditions, foundNotWanted(kindCRD, f.CRDs...))
	}
	for _, k := range []string{kindInstallPlan, kindDeployment, kindCatalogSource} {
		c := notApplicable(k)
		if k == kindCatalogSource {
			c.Status = metav1.ConditionFalse // reversed polarity: False is fine
		}
		dec.Conditions = append(dec.Conditions, c)
	}
}

// finish computes the Compliant condition from the others, in upstream's
// order, and sorts the conditions by type.
func finish(dec Decision, p *policyv1beta1.OperatorPolicy) Decision {
	byType := map[string]metav1.Condition{}
	for _, c := range dec.Conditions {
		byType[c.Type] = c
	}
	var msgs []string
	bad := false
	if v, ok := byType[ValidSpecType]; ok && v.Status != metav1.ConditionTrue {
		dec.Compliance, dec.Message = policyv1.NonCompliant, "NonCompliant; "+v.Message
	} else {
		for _, t := range []string{ValidSpecType, OperatorGroupType, SubscriptionType, InstallPlanType, CSVType, CRDType, DeploymentType, CatalogSourceType} {
			c, ok := byType[t]
			if !ok {
				bad = true
				continue
			}
			msgs = append(msgs, c.Message)
			want := metav1.ConditionTrue
			if t == CatalogSourceType {
				want = metav1.ConditionFalse
			}
			if c.Status != want {
				bad = true
			}
		}
		dec.Compliance = policyv1.Compliant
		if bad {
			dec.Compliance = policyv1.NonCompliant
		}
		dec.Message = string(dec.Compliance) + "; " + strings.Join(msgs, ", ")
	}
	ok := dec.Compliance == policyv1.Compliant
	reason := "NonCompliant"
	if ok {
		reason = "Compliant"
	}
	dec.Conditions = append(dec.Conditions, cond(CompliantType, ok, reason, dec.Message))
	sort.SliceStable(dec.Conditions, func(i, j int) bool { return dec.Conditions[i].Type < dec.Conditions[j].Type })
	_ = p
	return dec
}

// add appends c and the object it is about to the related objects.
func (dec *Decision) add(c metav1.Condition, kind, ns, name string) {
	dec.Conditions = append(dec.Conditions, c)
	if name == "" {
		return
	}
	apiVersion := operatorsv1alpha1.SchemeGroupVersion.String()
	if kind == kindOperatorGroup {
		apiVersion = operatorsv1.SchemeGroupVersion.String()
	}
	ok := c.Status == metav1.ConditionTrue
	dec.related(kind, apiVersion, ns, name, ok, c.Reason)
}

func (dec *Decision) related(kind, apiVersion, ns, name string, ok bool, reason string) {
	state := string(policyv1.NonCompliant)
	if ok {
		state = string(policyv1.Compliant)
	}
	dec.Related = append(dec.Related, policyv1.RelatedObject{
		Object:    policyv1.ObjectResource{Kind: kind, APIVersion: apiVersion, Metadata: policyv1.ObjectMetadata{Name: name, Namespace: ns}},
		Compliant: state, Reason: reason,
	})
}

func allowed(versions []policyv1.NonEmptyString, csv string) bool {
	return len(versions) == 0 || slices.Contains(versions, policyv1.NonEmptyString(csv))
}

func ownedBy(ip *operatorsv1alpha1.InstallPlan, sub *operatorsv1alpha1.Subscription) bool {
	for _, o := range ip.OwnerReferences {
		if o.Kind == operatorsv1alpha1.SubscriptionKind && o.Name == sub.Name {
			return true
		}
	}
	return false
}

// ownedByOther reports whether ip is also owned by a Subscription other than
// sub (OLM resolves a namespace's Subscriptions together into one plan).
func ownedByOther(ip *operatorsv1alpha1.InstallPlan, sub *operatorsv1alpha1.Subscription) bool {
	for _, o := range ip.OwnerReferences {
		if o.Kind == operatorsv1alpha1.SubscriptionKind && o.Name != sub.Name {
			return true
		}
	}
	return false
}

func ogMatches(have, want *operatorsv1.OperatorGroup) bool {
	if !slices.Equal(sorted(have.Spec.TargetNamespaces), sorted(want.Spec.TargetNamespaces)) {
		return false
	}
	if want.Spec.Selector != nil && !equality.Semantic.DeepEqual(have.Spec.Selector, want.Spec.Selector) {
		return false
	}
	return want.Spec.ServiceAccountName == "" || have.Spec.ServiceAccountName == want.Spec.ServiceAccountName
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// subMatches: every field the policy sets has the same value.
func subMatches(have *operatorsv1alpha1.Subscription, want *operatorsv1alpha1.Subscription) bool {
	if have.Spec == nil {
		return false
	}
	h, w := have.Spec, want.Spec
	for _, f := range [][2]string{{h.Package, w.Package}, {h.Channel, w.Channel}, {h.CatalogSource, w.CatalogSource},
		{h.CatalogSourceNamespace, w.CatalogSourceNamespace}, {h.StartingCSV, w.StartingCSV}} {
		if f[1] != "" && f[0] != f[1] {
			return false
		}
	}
	return w.Config == nil || equality.Semantic.DeepEqual(h.Config, w.Config) || emptyConfig(w.Config) && emptyConfig(h.Config)
}

func emptyConfig(c *operatorsv1alpha1.SubscriptionConfig) bool {
	return c == nil || equality.Semantic.DeepEqual(*c, operatorsv1alpha1.SubscriptionConfig{})
}

func mergeSubscription(have, want *operatorsv1alpha1.SubscriptionSpec) {
	for _, f := range []struct {
		dst *string
		src string
	}{{&have.Package, want.Package}, {&have.Channel, want.Channel},
		{&have.CatalogSource, want.CatalogSource}, {&have.CatalogSourceNamespace, want.CatalogSourceNamespace}, {&have.StartingCSV, want.StartingCSV}} {
		if f.src != "" {
			*f.dst = f.src
		}
	}
	if want.Config != nil {
		have.Config = want.Config
	}
}

// deploymentAvailable: the Deployment's Available condition is True.
func deploymentAvailable(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == "True"
		}
	}
	return false
}

// String names an action for logs and errors.
func (a Action) String() string {
	kind := fmt.Sprintf("%T", a.Object)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	return fmt.Sprintf("%s %s %s/%s", a.Verb, kind, a.Object.GetNamespace(), a.Object.GetName()+a.Object.GetGenerateName())
}
