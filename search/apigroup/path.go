package apigroup

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A request is what a path below ResourcesPath asks, the way a
// kube-apiserver reads its own paths: a kubeconfig whose server is
// https://<hub>/apis/search.flotilla.dev/v1alpha1/resources makes kubectl
// send its usual paths here.
type request struct {
	// What: one of the constants below.
	What what
	// GroupVersion of discovery of a group version, or of the resource.
	GroupVersion schema.GroupVersion
	// Resource, Namespace and Name of a list or get (Namespace "" = every
	// namespace, or cluster-scoped).
	Resource, Namespace, Name string
}

type what int

const (
	whatVersion      what = iota // /version
	whatCoreVersions             // /api
	whatGroups                   // /apis
	whatResources                // /api/v1, /apis/<group>/<version>
	whatList                     // a resource's collection
	whatGet                      // a named object
)

// parsePath reads the path below ResourcesPath ("" or starting with "/").
func parsePath(p string) (request, error) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	if len(parts) == 1 && parts[0] == "" {
		parts = nil
	}
	bad := func() (request, error) {
		return request{}, fmt.Errorf("%s is not a Kubernetes API path: search %s/api/v1/pods, %s/apis/apps/v1/namespaces/<namespace>/deployments...", ResourcesPath+p, ResourcesPath, ResourcesPath)
	}
	var gv schema.GroupVersion
	var rest []string
	switch {
	case len(parts) == 1 && parts[0] == "version":
		return request{What: whatVersion}, nil
	case len(parts) == 1 && parts[0] == "api":
		return request{What: whatCoreVersions}, nil
	case len(parts) == 1 && parts[0] == "apis":
		return request{What: whatGroups}, nil
	case len(parts) >= 2 && parts[0] == "api":
		gv, rest = schema.GroupVersion{Version: parts[1]}, parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		gv, rest = schema.GroupVersion{Group: parts[1], Version: parts[2]}, parts[3:]
	default:
		return bad()
	}
	for _, s := range rest {
		if s == "" {
			return bad()
		}
	}
	r := request{GroupVersion: gv}
	switch {
	case len(rest) == 0:
		r.What = whatResources
	case len(rest) == 1:
		r.What, r.Resource = whatList, rest[0]
	case len(rest) == 2 && rest[0] == "namespaces":
		// /api/v1/namespaces/<name>: the Namespace named.
		r.What, r.Resource, r.Name = whatGet, "namespaces", rest[1]
	case len(rest) == 2:
		r.What, r.Resource, r.Name = whatGet, rest[0], rest[1]
	case len(rest) == 3 && rest[0] == "namespaces":
		r.What, r.Namespace, r.Resource = whatList, rest[1], rest[2]
	case len(rest) == 4 && rest[0] == "namespaces":
		r.What, r.Namespace, r.Resource, r.Name = whatGet, rest[1], rest[2], rest[3]
	default:
		return request{}, fmt.Errorf("%s: subresources are not searched: search the objects themselves", ResourcesPath+p)
	}
	return r, nil
}
