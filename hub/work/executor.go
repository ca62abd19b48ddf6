package work

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	workv1 "open-cluster-management.io/api/work/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ExecuteAsVerb is the virtual verb OCM checks before a user may name an
// executor in a ManifestWork: RBAC `execute-as` on
// work.open-cluster-management.io `manifestworks`, in the work's namespace,
// for the resource name ExecutorName(...). Grant it with, for example,
//
//	rules:
//	- apiGroups: ["work.open-cluster-management.io"]
//	  resources: ["manifestworks"]
//	  verbs: ["execute-as"]
//	  resourceNames: ["system:serviceaccount:app:deployer"]
const ExecuteAsVerb = "execute-as"

// DefaultExecutorName is the resource name checked for a work without an
// executor when Options.NilExecutorValidating is on: OCM's virtual
// "/klusterlet-work-sa" service account (empty namespace), which stands for the
// work agent's own identity on the managed cluster.
const DefaultExecutorName = "system:serviceaccount::klusterlet-work-sa"

// ExecutorName is the user name of an executor ServiceAccount, which is also
// the resource name the execute-as permission is granted on.
func ExecutorName(sa *workv1.ManifestWorkSubjectServiceAccount) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// executorProblem says what is wrong with the shape of the executor at field
// ("" when it is usable): only ServiceAccount subjects exist, and they need a
// service account.
func executorProblem(field string, e *workv1.ManifestWorkExecutor) string {
	switch {
	case e.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount:
		return fmt.Sprintf("%s.subject.type %q is not supported: the only executor type is ServiceAccount", field, e.Subject.Type)
	case e.Subject.ServiceAccount == nil:
		return field + ".subject.serviceAccount is required when the type is ServiceAccount"
	case e.Subject.ServiceAccount.Namespace == "" || e.Subject.ServiceAccount.Name == "":
		return field + ".subject.serviceAccount needs both namespace and name"
	}
	return ""
}

// ExecutorCheck is one execute-as question: may User use Executor (the value
// of Field, nil when unset) for works in Namespace?
type ExecutorCheck struct {
	User      authenticationv1.UserInfo
	Namespace string
	// Field names the executor in messages, e.g. "spec.executor".
	Field    string
	Executor *workv1.ManifestWorkExecutor
	// NilExecutorValidating checks an unset executor as DefaultExecutorName
	// (the agent's own identity); off, an unset executor is not checked.
	NilExecutorValidating bool
	// Reason says, for an unset executor, why the agent's identity is
	// checked. Default: Field is unset and the hub validates unset executors.
	Reason string
}

// CheckExecutor answers c with a SubjectAccessReview for ExecuteAsVerb, as
// OCM's hub webhook makes. It returns "" when the requester may use the
// executor, else a refusal naming the user, the executor, the field and the
// permission to grant.
func CheckExecutor(ctx context.Context, sar client.Client, c ExecutorCheck) (string, error) {
	e := c.Executor
	var name, who string
	switch {
	case e == nil && !c.NilExecutorValidating:
		return "", nil
	case e == nil:
		name = DefaultExecutorName
		reason := c.Reason
		if reason == "" {
			reason = c.Field + " is unset, and the hub validates unset executors"
		}
		who = "the work agent's own identity (" + reason + ")"
	default:
		if p := executorProblem(c.Field, e); p != "" {
			return p, nil
		}
		name = ExecutorName(e.Subject.ServiceAccount)
		who = fmt.Sprintf("executor ServiceAccount %s/%s", e.Subject.ServiceAccount.Namespace, e.Subject.ServiceAccount.Name)
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range c.User.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: c.User.Username, UID: c.User.UID, Groups: c.User.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: workv1.GroupName, Resource: "manifestworks", Verb: ExecuteAsVerb,
			Namespace: c.Namespace, Name: name,
		},
	}}
	if err := sar.Create(ctx, review); err != nil {
		return "", fmt.Errorf("SubjectAccessReview for %s: %w", c.User.Username, err)
	}
	if review.Status.Allowed {
		return "", nil
	}
	return fmt.Sprintf("user %q may not use %s in namespace %s: %s needs RBAC permission to %s %s/manifestworks named %q in namespace %s",
		c.User.Username, who, c.Namespace, c.Field, ExecuteAsVerb, workv1.GroupName, name, c.Namespace), nil
}
