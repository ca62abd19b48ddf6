package executor

import (
	"context"
	"fmt"
	"strings"
	"sync"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	workv1 "open-cluster-management.io/api/work/v1"
)

// UserName is the user name of a ServiceAccount executor.
func UserName(sa *workv1.ManifestWorkSubjectServiceAccount) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// groups are the groups every ServiceAccount belongs to.
func groups(sa *workv1.ManifestWorkSubjectServiceAccount) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + sa.Namespace, "system:authenticated"}
}

// ServiceAccount returns the executor's service account, or an error saying
// why the executor cannot be used.
func ServiceAccount(e *workv1.ManifestWorkExecutor) (*workv1.ManifestWorkSubjectServiceAccount, error) {
	switch {
	case e.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount:
		return nil, fmt.Errorf("spec.executor.subject.type %q is not supported: the only executor type is ServiceAccount", e.Subject.Type)
	case e.Subject.ServiceAccount == nil || e.Subject.ServiceAccount.Namespace == "" || e.Subject.ServiceAccount.Name == "":
		return nil, fmt.Errorf("spec.executor.subject.serviceAccount needs a namespace and a name")
	}
	return e.Subject.ServiceAccount, nil
}

// Verbs are the rights an executor needs on an object to apply it with the
// given update strategy, as OCM checks them: Update and ServerSideApply need
// get, create, update and patch; CreateOnly get and create; ReadOnly only get.
// deletes adds delete: the object goes when the work does (it is not
// orphaned), and that right is checked now so a work never applies what it
// could not remove.
func Verbs(strategy *workv1.UpdateStrategy, deletes bool) []string {
	typ := workv1.UpdateStrategyTypeUpdate
	if strategy != nil && strategy.Type != "" {
		typ = strategy.Type
	}
	var verbs []string
	switch typ {
	case workv1.UpdateStrategyTypeReadOnly:
		return []string{"get"}
	case workv1.UpdateStrategyTypeCreateOnly:
		verbs = []string{"get", "create"}
	default:
		verbs = []string{"get", "create", "update", "patch"}
	}
	if deletes {
		verbs = append(verbs, "delete")
	}
	return verbs
}

// DeniedError says the executor lacks rights on an object.
type DeniedError struct {
	Executor string // namespace/name
	Verbs    []string
	Resource schema.GroupVersionResource
	// Namespace is empty for a cluster-scoped object.
	Namespace, Name string
}

func (e *DeniedError) Error() string {
	res := e.Resource.Resource
	if e.Resource.Group != "" {
		res += "." + e.Resource.Group
	}
	where := ""
	if e.Namespace != "" {
		where = " in namespace " + e.Namespace
	}
	return fmt.Sprintf("executor ServiceAccount %s may not %s %s %q%s on the managed cluster; grant it these verbs there (RBAC), or remove spec.executor",
		e.Executor, strings.Join(e.Verbs, ", "), res, e.Name, where)
}

// Authorizer checks executors' rights and hands out impersonating clients.
type Authorizer struct {
	// Reviews creates SubjectAccessReviews on the managed cluster.
	Reviews authorizationclient.SubjectAccessReviewInterface
	// Config reaches the managed cluster as the agent; impersonating clients
	// are derived from it.
	Config *rest.Config

	mu      sync.Mutex
	clients map[string]dynamic.Interface
}

// Check asks the managed cluster whether sa may do every verb on the object,
// and returns a DeniedError listing those it may not.
func (a *Authorizer) Check(ctx context.Context, sa *workv1.ManifestWorkSubjectServiceAccount, gvr schema.GroupVersionResource, namespace, name string, verbs []string) error {
	var denied []string
	for _, verb := range verbs {
		sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: UserName(sa), Groups: groups(sa),
			ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Group: gvr.Group, Version: gvr.Version, Resource: gvr.Resource, Namespace: namespace, Name: name,
			},
		}}
		got, err := a.Reviews.Create(ctx, sar, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("checking executor %s/%s: SubjectAccessReview: %w", sa.Namespace, sa.Name, err)
		}
		if !got.Status.Allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return &DeniedError{Executor: sa.Namespace + "/" + sa.Name, Verbs: denied, Resource: gvr, Namespace: namespace, Name: name}
	}
	return nil
}

// Client returns a dynamic client that impersonates sa (one per executor,
// kept for reuse).
func (a *Authorizer) Client(sa *workv1.ManifestWorkSubjectServiceAccount) (dynamic.Interface, error) {
	user := UserName(sa)
	a.mu.Lock()
	defer a.mu.Unlock()
	if c, ok := a.clients[user]; ok {
		return c, nil
	}
	cfg := rest.CopyConfig(a.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: groups(sa)}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if a.clients == nil {
		a.clients = map[string]dynamic.Interface{}
	}
	a.clients[user] = c
	return c, nil
}
