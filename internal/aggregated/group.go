package aggregated

import (
	"net/http"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
)

// Group is one group version served by the Server.
type Group struct {
	// Name is the API group, e.g. compliance.flotilla.dev. Required.
	Name string
	// Version is the group's one version, e.g. v1alpha1. Required.
	Version string
	// Resources are the group version's resources. At least one.
	Resources []Resource
	// AllAuthenticated lets every authenticated user past the hub apiserver's
	// own authorization (a ClusterRole with get and list on the resources,
	// bound to system:authenticated): for a group whose handlers authorise
	// each user themselves. Default false: users need RBAC on the resources.
	AllAuthenticated bool
}

// Resource is one resource of a group version: what discovery lists and the
// handler of requests on its path, /apis/<group>/<version>/<name>[/...], or
// /apis/<group>/<version>/namespaces/<namespace>/<name>[/...] when
// Namespaced.
type Resource struct {
	// Name is the plural resource name, e.g. reports. Required.
	Name string
	// SingularName, e.g. report. Default: Name.
	SingularName string
	// Kind, e.g. ComplianceReport. Required.
	Kind string
	// Handler serves GET and HEAD on the resource's path for an authenticated
	// user, and POST when Create is set. Required.
	Handler func(w http.ResponseWriter, req *http.Request, u user.Info)
	// Namespaced puts the resource under namespaces/<namespace>/. Default
	// false: cluster-scoped.
	Namespaced bool
	// Create lets POST through to Handler (discovery lists the verb create),
	// with a body of at most MaxBodyBytes. Default false: read-only.
	Create bool
	// MaxBodyBytes bounds a POST's body. Default 8 MiB.
	MaxBodyBytes int64
}

// Namespace is the namespace of a request to a namespaced resource's path
// (/apis/<group>/<version>/namespaces/<namespace>/...), or "".
func Namespace(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	if len(parts) >= 5 && parts[0] == "apis" && parts[3] == "namespaces" {
		return parts[4]
	}
	return ""
}

// APIServiceName is the APIService of g: <version>.<group>.
func (g Group) APIServiceName() string { return g.Version + "." + g.Name }

// Path is the root of g's resources, /apis/<group>/<version>.
func (g Group) Path() string { return "/apis/" + g.Name + "/" + g.Version }
