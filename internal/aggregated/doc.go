// Package aggregated serves the hub's computed data as an aggregated API: an
// APIService per group version, so the hub apiserver authenticates the user,
// `kubectl get --raw /apis/<group>/<version>/...` works with any kubeconfig,
// and no port of the hub needs its own login (the model is metrics-server).
//
// One Server serves every group registered with it (compliance.flotilla.dev
// today, fleet search later); a group brings its resources and their
// handlers, the server brings the rest:
//
//   - Authentication: the hub apiserver proxies a request with the user's
//     identity in X-Remote-User, X-Remote-Group and X-Remote-Extra-* headers,
//     over a client certificate signed by its front-proxy CA. The server trusts
//     those headers only from such a certificate, with one of the allowed
//     common names, both read (and followed) from the ConfigMap
//     kube-system/extension-apiserver-authentication that the apiserver
//     publishes. The checks are k8s.io/apiserver's request-header
//     authenticator, not code of ours. Anything else (no client certificate,
//     another CA, a forged header) is 401.
//   - Discovery: /apis (APIGroupList), /apis/<group> (APIGroup) and
//     /apis/<group>/<version> (APIResourceList), what the apiserver's
//     availability check and discovery read. Any authenticated user may read
//     them.
//   - Authorization is the group's: a handler receives the user and decides
//     (compliance filters by SubjectAccessReview per namespace). The hub
//     apiserver authorises the request first, so a group that filters for
//     itself asks for AllAuthenticated: a ClusterRole granting get and list
//     on its resources, bound to system:authenticated.
//   - Registration: a Service and APIService per group version, with the
//     caBundle of the serving certificate. A hub running as a process (dev,
//     tests) has no Pods: it writes the Service without selector and an
//     EndpointSlice with its own address, which must not be loopback
//     (Endpoints refuse 127.0.0.0/8; the apiserver dials it directly with
//     --enable-aggregator-routing). A hub running as Pods (`flotilla init
//     --deploy`) names the Service in front of them.
//
// The serving certificate must name <service>.<namespace>.svc: the apiserver
// checks that name whichever address it dials.
package aggregated
