package hubrbac_test

import (
	"bufio"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/hub/deploy"
)

// rightsDoc is the golden copy of the hub's rights: the table under "The
// hub's rights" in docs/deploy.md.
var rightsDoc = filepath.Join("..", "..", "..", "..", "docs", "deploy.md")

const (
	// In the table's Where column.
	whereClusterWide     = "cluster-wide"
	whereClusterNS       = "each cluster namespace"
	rightsSectionHeading = "### The hub's rights"
)

// right is one verb on one resource (of one name, "" for any) of one group.
type right struct{ group, resource, name, verb string }

func (r right) String() string {
	s := r.verb + " " + r.resource
	if r.group != "" {
		s += "." + r.group
	}
	if r.name != "" {
		s += " named " + r.name
	}
	return s
}

// documentedRights parses the table of docs/deploy.md: Where -> rights.
func documentedRights(t *testing.T) map[string]map[right]bool {
	t.Helper()
	f, err := os.Open(rightsDoc)
	require.NoError(t, err)
	defer f.Close()
	out := map[string]map[right]bool{}
	in, rows := false, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == rightsSectionHeading:
			in = true
			continue
		case !in:
			continue
		case strings.HasPrefix(line, "#"):
			in = false // the next section
			continue
		case !strings.HasPrefix(line, "|"):
			if rows > 0 {
				in = false // the table ended
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		require.Len(t, cells, 6, "%s: a row of the hub's rights has 6 columns (Where, API group, Resources, Names, Verbs, For): %q", rightsDoc, line)
		where := strings.Trim(strings.TrimSpace(cells[0]), "`")
		if where == "Where" || strings.HasPrefix(where, "---") {
			continue
		}
		rows++
		groups, resources, names, verbs := list(cells[1]), list(cells[2]), list(cells[3]), list(cells[4])
		require.NotEmpty(t, groups, "%s: row %q names no API group", rightsDoc, line)
		require.NotEmpty(t, resources, "%s: row %q names no resource", rightsDoc, line)
		require.NotEmpty(t, verbs, "%s: row %q names no verb", rightsDoc, line)
		if len(names) == 0 {
			names = []string{""}
		}
		if out[where] == nil {
			out[where] = map[right]bool{}
		}
		for _, r := range expand(groups, resources, names, verbs) {
			out[where][r] = true
		}
	}
	require.NoError(t, sc.Err())
	require.NotZero(t, rows, "%s: no table under %q", rightsDoc, rightsSectionHeading)
	return out
}

// list reads a cell such as "`get`, `list`" ("`\"\"`" is the core group).
func list(cell string) []string {
	var out []string
	for _, v := range strings.Split(cell, ",") {
		v = strings.Trim(strings.TrimSpace(v), "`")
		switch v {
		case "":
		case `""`:
			out = append(out, "")
		default:
			out = append(out, v)
		}
	}
	return out
}

func expand(groups, resources, names, verbs []string) []right {
	var out []right
	for _, g := range groups {
		for _, res := range resources {
			for _, n := range names {
				for _, v := range verbs {
					out = append(out, right{g, res, n, v})
				}
			}
		}
	}
	return out
}

// effectiveRights asks the apiserver what cfg's user may do in namespace
// (its cluster-wide rights included).
func effectiveRights(ctx context.Context, t *testing.T, cfg *rest.Config, namespace string) map[right]bool {
	t.Helper()
	review, err := kubernetes.NewForConfigOrDie(cfg).AuthorizationV1().SelfSubjectRulesReviews().Create(ctx,
		&authorizationv1.SelfSubjectRulesReview{Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: namespace}}, metav1.CreateOptions{})
	require.NoError(t, err)
	require.False(t, review.Status.Incomplete, "the rules review in %s is incomplete: %s", namespace, review.Status.EvaluationError)
	out := map[right]bool{}
	for _, r := range review.Status.ResourceRules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, x := range expand(r.APIGroups, r.Resources, names, r.Verbs) {
			out[x] = true
		}
	}
	return out
}

// differ lists what is in a and not in b, sorted.
func differ(a, b map[right]bool) []string {
	var out []string
	for r := range a {
		if !b[r] {
			out = append(out, r.String())
		}
	}
	sort.Strings(out)
	return out
}

// checkRights compares the hub identity's rights with the table of
// docs/deploy.md in its namespace, kube-system, a cluster namespace and
// another namespace, and tries what it must not do.
func checkRights(ctx context.Context, t *testing.T, admin, hubIdentity *rest.Config, clusterNS string) {
	t.Helper()
	doc := documentedRights(t)
	for where := range doc {
		require.Contains(t, []string{whereClusterWide, whereClusterNS, deploy.Namespace, "kube-system"}, where,
			"%s: Where %q of the hub's rights is none this test checks", rightsDoc, where)
	}
	const elsewhere = "not-a-cluster" // a fresh apiserver: nobody else's
	for _, ns := range []string{deploy.Namespace, "kube-system", clusterNS, elsewhere} {
		want := map[right]bool{}
		for r := range doc[whereClusterWide] {
			want[r] = true
		}
		where := ns
		if ns == clusterNS {
			where = whereClusterNS
		}
		for r := range doc[where] {
			want[r] = true
		}
		got := effectiveRights(ctx, t, hubIdentity, ns)
		assert.Empty(t, differ(got, want), "in namespace %s the hub holds rights %s does not list under %q: list them there (and why) or take them from manifests/hub",
			ns, rightsDoc, rightsSectionHeading)
		assert.Empty(t, differ(want, got), "in namespace %s the hub lacks rights %s lists under %q: grant them in manifests/hub or take them from the table",
			ns, rightsDoc, rightsSectionHeading)
	}
	checkRefused(ctx, t, admin, hubIdentity, elsewhere)
}

// checkRefused tries, as the hub, what it must never do.
func checkRefused(ctx context.Context, t *testing.T, admin, hubIdentity *rest.Config, elsewhere string) {
	t.Helper()
	asAdmin, asHub := kubernetes.NewForConfigOrDie(admin), kubernetes.NewForConfigOrDie(hubIdentity)
	forbidden := func(what string, err error) {
		t.Helper()
		assert.True(t, apierrors.IsForbidden(err), "the hub may %s: want Forbidden, got %v", what, err)
	}

	// Another product's webhook configurations.
	vwc, err := asAdmin.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "another-product"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	mwc, err := asAdmin.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "another-product"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	vwc.Labels = map[string]string{"changed-by": "hub"}
	_, err = asHub.AdmissionregistrationV1().ValidatingWebhookConfigurations().Update(ctx, vwc, metav1.UpdateOptions{})
	forbidden("update another product's ValidatingWebhookConfiguration", err)
	err = asHub.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, vwc.Name, metav1.DeleteOptions{})
	forbidden("delete another product's ValidatingWebhookConfiguration", err)
	_, err = asHub.AdmissionregistrationV1().ValidatingWebhookConfigurations().Get(ctx, vwc.Name, metav1.GetOptions{})
	forbidden("read another product's ValidatingWebhookConfiguration", err)
	_, err = asHub.AdmissionregistrationV1().ValidatingWebhookConfigurations().List(ctx, metav1.ListOptions{})
	forbidden("list every ValidatingWebhookConfiguration", err)
	mwc.Labels = map[string]string{"changed-by": "hub"}
	_, err = asHub.AdmissionregistrationV1().MutatingWebhookConfigurations().Update(ctx, mwc, metav1.UpdateOptions{})
	forbidden("update another product's MutatingWebhookConfiguration", err)
	err = asHub.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(ctx, mwc.Name, metav1.DeleteOptions{})
	forbidden("delete another product's MutatingWebhookConfiguration", err)

	// Leases outside its own and the clusters'.
	lease := func(ns, name string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	for _, ns := range []string{elsewhere, "kube-system"} {
		_, err = asHub.CoordinationV1().Leases(ns).Create(ctx, lease(ns, "planted"), metav1.CreateOptions{})
		forbidden("create a Lease in namespace "+ns, err)
	}
	_, err = asHub.CoordinationV1().Leases("").List(ctx, metav1.ListOptions{})
	forbidden("list every Lease of the cluster", err)
	_, err = asHub.CoordinationV1().Leases(elsewhere).List(ctx, metav1.ListOptions{})
	forbidden("list the Leases of namespace "+elsewhere, err)
	other, err := asAdmin.CoordinationV1().Leases(deploy.Namespace).Create(ctx, lease(deploy.Namespace, "another-leader"), metav1.CreateOptions{})
	require.NoError(t, err)
	other.Labels = map[string]string{"changed-by": "hub"}
	_, err = asHub.CoordinationV1().Leases(deploy.Namespace).Update(ctx, other, metav1.UpdateOptions{})
	forbidden("update a Lease of its namespace other than its leader election's", err)
	err = asHub.CoordinationV1().Leases(deploy.Namespace).Delete(ctx, other.Name, metav1.DeleteOptions{})
	forbidden("delete a Lease of its namespace", err)

	// Binding a ClusterRole it does not hold, even where it binds its own.
	_, err = asAdmin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: elsewhere}}, metav1.CreateOptions{})
	require.NoError(t, err)
	_, err = asHub.RbacV1().RoleBindings(elsewhere).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "hub-admin"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: deploy.Name, Namespace: deploy.Namespace}},
	}, metav1.CreateOptions{})
	forbidden("bind cluster-admin", err)
}
