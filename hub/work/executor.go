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

// ExecutorName is the user name of an executor ServiceAccount, which is also
// the resource name the execute-as permission is granted on.
func ExecutorName(sa *workv1.ManifestWorkSubjectServiceAccount) string {
	return "system:serviceaccount:" + sa.Namespace + ":" + sa.Name
}

// executorProblem says what is wrong with an executor's shape ("" when it is
// usable): only ServiceAccount subjects exist, and they need a service account.
func executorProblem(e *workv1.ManifestWorkExecutor) string {
	switch {
	case e.Subject.Type != workv1.ExecutorSubjectTypeServiceAccount:
		return fmt.Sprintf("spec.executor.subject.type %q is not supported: the only executor type is ServiceAccount", e.Subject.Type)
	case e.Subject.ServiceAccount == nil:
		return "spec.executor.subject.serviceAccount is required when the type is ServiceAccount"
	case e.Subject.ServiceAccount.Namespace == "" || e.Subject.ServiceAccount.Name == "":
		return "spec.executor.subject.serviceAccount needs both namespace and name"
	}
	return ""
}

// checkExecutor refuses a work whose requester may not use its executor: a
// SubjectAccessReview for ExecuteAsVerb, as OCM's hub webhook makes. It
// returns "" when the work may be admitted.
func checkExecutor(ctx context.Context, c client.Client, user authenticationv1.UserInfo, work *workv1.ManifestWork) (string, error) {
	e := work.Spec.Executor
	if e == nil {
		return "", nil
	}
	if p := executorProblem(e); p != "" {
		return p, nil
	}
	extra := map[string]authorizationv1.ExtraValue{}
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	name := ExecutorName(e.Subject.ServiceAccount)
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User: user.Username, UID: user.UID, Groups: user.Groups, Extra: extra,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Group: workv1.GroupName, Resource: "manifestworks", Verb: ExecuteAsVerb,
			Namespace: work.Namespace, Name: name,
		},
	}}
	if err := c.Create(ctx, sar); err != nil {
		return "", fmt.Errorf("SubjectAccessReview for %s: %w", user.Username, err)
	}
	if sar.Status.Allowed {
		return "", nil
	}
	sa := e.Subject.ServiceAccount
	return fmt.Sprintf("user %q may not use executor ServiceAccount %s/%s in namespace %s: spec.executor needs RBAC permission to %s %s/manifestworks named %q in namespace %s",
		user.Username, sa.Namespace, sa.Name, work.Namespace, ExecuteAsVerb, workv1.GroupName, name, work.Namespace), nil
}
