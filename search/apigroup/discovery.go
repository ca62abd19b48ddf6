package apigroup

import (
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"flotilla.dev/flotilla/search/index"
)

// groupList is /apis below ResourcesPath: the groups of the synced
// resources (not the core group, which is /api).
func groupList(known []index.Resource) *metav1.APIGroupList {
	versions := map[string][]string{}
	for _, r := range known {
		if r.Group != "" && !contains(versions[r.Group], r.Version) {
			versions[r.Group] = append(versions[r.Group], r.Version)
		}
	}
	names := make([]string, 0, len(versions))
	for g := range versions {
		names = append(names, g)
	}
	sort.Strings(names)
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
	for _, g := range names {
		var vs []metav1.GroupVersionForDiscovery
		for _, v := range versions[g] {
			vs = append(vs, metav1.GroupVersionForDiscovery{GroupVersion: g + "/" + v, Version: v})
		}
		l.Groups = append(l.Groups, metav1.APIGroup{Name: g, Versions: vs, PreferredVersion: vs[0]})
	}
	return l
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// resourceList is a group version's discovery: its synced resources, which
// may be listed (and got by name).
func resourceList(known []index.Resource, gv schema.GroupVersion) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: gv.String(), APIResources: []metav1.APIResource{}}
	for _, r := range known {
		if r.GroupVersion() != gv {
			continue
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Resource, SingularName: strings.ToLower(r.Kind), Kind: r.Kind,
			Namespaced: r.Namespaced, Verbs: metav1.Verbs{"get", "list"}})
	}
	return l
}

// find is the synced resource gv's resource names. A version other than
// the one synced still finds it: the index keeps objects in the version
// their cluster sent.
func find(known []index.Resource, gv schema.GroupVersion, resource string) (index.Resource, bool) {
	for _, r := range known {
		if r.Group == gv.Group && r.Resource == resource {
			return r, true
		}
	}
	return index.Resource{}, false
}
