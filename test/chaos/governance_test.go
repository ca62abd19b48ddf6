//go:build chaos

package chaos

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/util/retry"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/internal/ocm"
	"flotilla.dev/flotilla/internal/scheme"
)

// The governance part of the run: root Policies on the hub, bound to the
// Placement of every cluster and enforced there by the governance addons
// (governance-policy-framework and config-policy-controller, hosted next to
// each klusterlet), and the example addon enabled and disabled on the
// clusters.
const (
	policyPrefix    = "chaos-pol-"
	maxPolicies     = 3
	exampleAddon    = "example"
	governanceAddon = "governance-policy-framework"
	engineAddon     = "config-policy-controller"
	searchAddon     = "search"
)

// addonAgents are the hosted agents the injector may kill.
var addonAgents = []string{governanceAddon, engineAddon, exampleAddon}

// enabledAddons are the addons every cluster has for the whole run: the
// governance addons and fleet search (in the nodes mode the two hub Pods
// share one index in PostgreSQL: sharedHubStore).
func (r *run) enabledAddons() []string {
	return []string{governanceAddon, engineAddon, searchAddon}
}

// killableAgents are the hosted agents the injector may kill in this run.
func (r *run) killableAgents() []string {
	return append(slices.Clone(addonAgents), searchAddon)
}

type governance struct {
	hub      client.Client
	spokes   map[string]client.Client
	seq      int
	policies map[string]int  // root policy -> version of its ConfigMap
	example  map[string]bool // cluster -> example addon enabled
}

// setupGovernance enables the governance addons on every cluster and waits
// until they are Available (checked again by every convergence).
func (r *run) setupGovernance() {
	hub, err := client.New(r.hubCfg, client.Options{Scheme: scheme.New()})
	require.NoError(r.t, err)
	g := &governance{hub: hub, spokes: map[string]client.Client{}, policies: map[string]int{}, example: map[string]bool{}}
	for _, c := range r.clusters {
		sc, err := client.New(r.spokeCfgs[c], client.Options{Scheme: scheme.New()})
		require.NoError(r.t, err)
		g.spokes[c] = sc
		for _, a := range r.enabledAddons() {
			require.NoError(r.t, hub.Create(r.ctx, &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: a, Namespace: c}}))
		}
	}
	r.gov = g
}

// policyOp creates, updates or deletes a root Policy (with its
// PlacementBinding): at most maxPolicies live at once.
func (r *run) policyOp() {
	g := r.gov
	names := slices.Sorted(maps.Keys(g.policies))
	switch p := r.rng.IntN(100); {
	case len(names) == 0 || p < 40 && len(names) < maxPolicies:
		g.seq++
		name := policyPrefix + strconv.Itoa(g.seq)
		if err := g.hub.Create(r.ctx, rootPolicy(name, 1)); err != nil {
			r.ops["policy-create-failed"]++
			return
		}
		binding := &policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rsNamespace},
			PlacementRef: policyv1.PlacementSubject{APIGroup: "cluster.open-cluster-management.io", Kind: "Placement", Name: "all"},
			Subjects:     []policyv1.Subject{{APIGroup: policyv1.GroupName, Kind: "Policy", Name: name}}}
		if err := g.hub.Create(r.ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
			// The policy exists unbound: the next create attempt of this name never comes, so delete it.
			_ = g.hub.Delete(r.ctx, rootPolicy(name, 1))
			r.ops["policy-create-failed"]++
			return
		}
		r.ops["policy-create"]++
		g.policies[name] = 1
	case p < 80:
		name := names[r.rng.IntN(len(names))]
		v := g.policies[name] + 1
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &policyv1.Policy{}
			if err := g.hub.Get(r.ctx, client.ObjectKey{Namespace: rsNamespace, Name: name}, cur); err != nil {
				return err
			}
			cur.Spec = rootPolicy(name, v).Spec
			return g.hub.Update(r.ctx, cur)
		})
		if err != nil {
			r.ops["policy-update-failed"]++
			return
		}
		r.ops["policy-update"]++
		g.policies[name] = v
	default:
		name := names[r.rng.IntN(len(names))]
		for _, o := range []client.Object{rootPolicy(name, 0),
			&policyv1.PlacementBinding{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rsNamespace}}} {
			if err := g.hub.Delete(r.ctx, o); err != nil && !apierrors.IsNotFound(err) {
				r.ops["policy-delete-failed"]++
				return
			}
		}
		r.ops["policy-delete"]++
		delete(g.policies, name)
	}
}

// rootPolicy enforces ConfigMap default/<name> holding version v.
func rootPolicy(name string, v int) *policyv1.Policy {
	cp := map[string]any{
		"apiVersion": "policy.open-cluster-management.io/v1", "kind": "ConfigurationPolicy",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"remediationAction": "enforce", "severity": "low",
			"object-templates": []any{map[string]any{"complianceType": "musthave", "objectDefinition": map[string]any{
				"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": name, "namespace": "default"},
				"data":     map[string]any{"version": strconv.Itoa(v)}}}}}}
	raw, _ := json.Marshal(cp)
	return &policyv1.Policy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: rsNamespace,
		Annotations: map[string]string{policyv1.StandardsAnnotation: "NIST SP 800-53", policyv1.ControlsAnnotation: "CM-2 Baseline Configuration"}},
		Spec: policyv1.PolicySpec{RemediationAction: policyv1.RemediationAction("enforce"),
			PolicyTemplates: []*policyv1.PolicyTemplate{{ObjectDefinition: kruntime.RawExtension{Raw: raw}}}}}
}

// addonOp enables or disables the example addon on a cluster.
func (r *run) addonOp() {
	g := r.gov
	c := r.clusters[r.rng.IntN(len(r.clusters))]
	mca := &addonv1alpha1.ManagedClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: exampleAddon, Namespace: c}}
	if g.example[c] {
		if err := g.hub.Delete(r.ctx, mca); err != nil && !apierrors.IsNotFound(err) {
			r.ops["addon-disable-failed"]++
			return
		}
		r.ops["addon-disable"]++
		g.example[c] = false
		return
	}
	err := g.hub.Create(r.ctx, mca)
	var existing metav1.Object // nil unless read
	if apierrors.IsAlreadyExists(err) {
		// Still there after a disable, while the hub cleans up (its
		// finalizer), or an earlier create that landed after all.
		got := &addonv1alpha1.ManagedClusterAddOn{}
		if g.hub.Get(r.ctx, client.ObjectKeyFromObject(mca), got) == nil {
			existing = got
		}
	}
	if !Enabled(err, existing) {
		r.ops["addon-enable-failed"]++
		return
	}
	r.ops["addon-enable"]++
	g.example[c] = true
}

// governanceViolations checks that every live policy is enforced at its last
// version on every cluster and its root status says so, that a deleted one
// left no replica, and that the addons are as enabled.
func (r *run) governanceViolations() []Violation {
	g := r.gov
	if g == nil {
		return nil
	}
	var out []Violation
	stale := func(format string, args ...any) { out = append(out, Violation{Stale, fmt.Sprintf(format, args...)}) }
	for _, name := range slices.Sorted(maps.Keys(g.policies)) {
		v := strconv.Itoa(g.policies[name])
		root := &policyv1.Policy{}
		if err := g.hub.Get(r.ctx, client.ObjectKey{Namespace: rsNamespace, Name: name}, root); err != nil {
			stale("cannot read root policy %s: %v", name, err)
			continue
		}
		perCluster := map[string]policyv1.ComplianceState{}
		for _, s := range root.Status.Status {
			perCluster[s.ClusterName] = s.ComplianceState
		}
		for _, c := range r.clusters {
			cm := &corev1.ConfigMap{}
			if err := g.spokes[c].Get(r.ctx, client.ObjectKey{Namespace: "default", Name: name}, cm); err != nil {
				stale("policy %s not enforced on %s: %v", name, c, err)
			} else if cm.Data["version"] != v {
				stale("policy %s enforced version %s on %s, want %s", name, cm.Data["version"], c, v)
			}
			if perCluster[c] != policyv1.Compliant {
				stale("root policy %s says %q for %s, the cluster holds what it enforces", name, perCluster[c], c)
			}
		}
		if root.Status.ComplianceState != policyv1.Compliant {
			stale("root policy %s is %q, not Compliant", name, root.Status.ComplianceState)
		}
	}
	// Deleted policies leave no replica on the hub or on a cluster.
	for _, c := range r.clusters {
		var replicas policyv1.PolicyList
		if err := g.hub.List(r.ctx, &replicas, client.InNamespace(c)); err != nil {
			stale("cannot list the replicas of %s: %v", c, err)
			continue
		}
		for _, p := range replicas.Items {
			_, root, _ := strings.Cut(p.Name, ".")
			if strings.HasPrefix(root, policyPrefix) && g.policies[root] == 0 {
				stale("replica %s/%s of a deleted policy is still on the hub", c, p.Name)
			}
		}
		var spokeCopies policyv1.PolicyList
		if err := g.spokes[c].List(r.ctx, &spokeCopies, client.InNamespace(c)); err == nil {
			for _, p := range spokeCopies.Items {
				_, root, _ := strings.Cut(p.Name, ".")
				if strings.HasPrefix(root, policyPrefix) && g.policies[root] == 0 {
					stale("replica %s/%s of a deleted policy is still on cluster %s", c, p.Name, c)
				}
			}
		}
		// Addons: the governance ones always Available; the example as enabled.
		for _, a := range []string{governanceAddon, engineAddon, exampleAddon} {
			mca := &addonv1alpha1.ManagedClusterAddOn{}
			err := g.hub.Get(r.ctx, client.ObjectKey{Namespace: c, Name: a}, mca)
			want := a != exampleAddon || g.example[c]
			switch {
			case want && err != nil:
				stale("addon %s on %s: %v", a, c, err)
			case want && !meta.IsStatusConditionTrue(mca.Status.Conditions, addonv1alpha1.ManagedClusterAddOnConditionAvailable):
				stale("addon %s on %s is not Available", a, c)
			case !want && err == nil:
				stale("addon %s on %s is still there after disable", a, c)
			case !want && !apierrors.IsNotFound(err):
				stale("addon %s on %s: %v", a, c, err)
			case !want:
				works, err := r.works.WorkV1().ManifestWorks(c).List(r.ctx, metav1.ListOptions{LabelSelector: ocm.AddonNameLabel + "=" + a})
				if err != nil {
					stale("cannot list the works of %s: %v", c, err)
				} else if len(works.Items) > 0 {
					stale("addon %s disabled on %s, but its work %s is still there", a, c, works.Items[0].Name)
				}
			}
		}
	}
	return out
}
