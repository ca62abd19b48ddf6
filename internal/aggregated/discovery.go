package aggregated

import (
	"encoding/json"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// groupList is /apis: every served group with its one version.
func (s *Server) groupList() *metav1.APIGroupList {
	l := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
	for _, g := range s.o.Groups {
		gr := apiGroup(g)
		gr.TypeMeta = metav1.TypeMeta{}
		l.Groups = append(l.Groups, *gr)
	}
	return l
}

// apiGroup is /apis/<group>.
func apiGroup(g Group) *metav1.APIGroup {
	v := metav1.GroupVersionForDiscovery{GroupVersion: g.Name + "/" + g.Version, Version: g.Version}
	return &metav1.APIGroup{TypeMeta: metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"},
		Name: g.Name, Versions: []metav1.GroupVersionForDiscovery{v}, PreferredVersion: v}
}

// resourceList is /apis/<group>/<version>: the resources, read with get
// (the resource's own path) and list, and those that take POST with create.
func resourceList(g Group) *metav1.APIResourceList {
	l := &metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: g.Name + "/" + g.Version,
		APIResources: []metav1.APIResource{}}
	for _, r := range g.Resources {
		singular := r.SingularName
		if singular == "" {
			singular = r.Name
		}
		v := verbs
		if r.Create {
			v = append(metav1.Verbs{"create"}, verbs...)
		}
		l.APIResources = append(l.APIResources, metav1.APIResource{Name: r.Name, SingularName: singular, Kind: r.Kind, Namespaced: r.Namespaced, Verbs: v})
	}
	return l
}

// verbs of every resource: the hub apiserver authorises GET on a
// resource's path as list, and on a name under it as get.
var verbs = metav1.Verbs{"get", "list"}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}
