package aggregated

import (
	"context"
	"fmt"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

// ManagedBy labels what the server writes.
const ManagedBy = "flotilla-hub"

// portName is the Service's and EndpointSlice's port name: the apiserver
// matches the two by it.
const portName = "https"

// register writes, in order: the Service and its EndpointSlice (with
// Endpoint), the ClusterRoles of AllAuthenticated groups, the APIServices.
func (s *Server) register(ctx context.Context) error {
	if s.o.Endpoint != "" {
		if err := s.writeService(ctx); err != nil {
			return fmt.Errorf("aggregated API: service %s: %w", s.o.Service, err)
		}
	}
	for _, g := range s.o.Groups {
		if g.AllAuthenticated {
			if err := s.writeReaderRole(ctx, g); err != nil {
				return fmt.Errorf("aggregated API: reader role of %s: %w", g.APIServiceName(), err)
			}
		}
		if err := s.writeAPIService(ctx, g); err != nil {
			return fmt.Errorf("aggregated API: APIService %s: %w", g.APIServiceName(), err)
		}
	}
	return nil
}

func (s *Server) writeService(ctx context.Context) error {
	host, portText, _ := net.SplitHostPort(s.o.Endpoint)
	port, err := strconv.Atoi(portText)
	if err != nil {
		return fmt.Errorf("endpoint port %q: %w", portText, err)
	}
	ns, name := s.o.Service.Namespace, s.o.Service.Name
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	labels := map[string]string{"app.kubernetes.io/managed-by": ManagedBy}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: portName, Port: s.o.ServicePort, TargetPort: intstr.FromInt(port), Protocol: corev1.ProtocolTCP}},
	}}
	if err := upsert(ctx, svc, s.kube.CoreV1().Services(ns).Get, s.kube.CoreV1().Services(ns).Create, s.kube.CoreV1().Services(ns).Update, func(have *corev1.Service) {
		have.Labels, have.Spec.Ports, have.Spec.Selector = labels, svc.Spec.Ports, nil
	}); err != nil {
		return err
	}
	family := discoveryv1.AddressTypeIPv4
	if net.ParseIP(host).To4() == nil {
		family = discoveryv1.AddressTypeIPv6
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy}},
		AddressType: family,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	slices := s.kube.DiscoveryV1().EndpointSlices(ns)
	return upsert(ctx, slice, slices.Get, slices.Create, slices.Update, func(have *discoveryv1.EndpointSlice) {
		have.Labels, have.AddressType, have.Endpoints, have.Ports = slice.Labels, slice.AddressType, slice.Endpoints, slice.Ports
	})
}

// ReaderRoleName is the ClusterRole (and ClusterRoleBinding) that lets every
// authenticated user read g's resources through the hub apiserver.
func ReaderRoleName(g Group) string { return "flotilla:" + g.Name + ":reader" }

// ReaderRules are the rules of g's reader ClusterRole: get and list on
// every resource of the group and every path below one. The path below a
// resource is what the apiserver reads as a name and a subresource
// (/resources/api/v1/pods: name api, subresource v1), and RBAC matches a
// subresource only exactly or as "*/<subresource>", never "<resource>/*":
// "*" is the one rule that covers them. The identity the server runs as
// must hold the rules itself to bind them (manifests/hub: RBAC refuses a
// grant of more than its maker holds unless it may escalate, which the hub
// may not).
func ReaderRules(g Group) []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{{APIGroups: []string{g.Name}, Resources: []string{"*"}, Verbs: verbs}}
}

func (s *Server) writeReaderRole(ctx context.Context, g Group) error {
	labels := map[string]string{"app.kubernetes.io/managed-by": ManagedBy}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: ReaderRoleName(g), Labels: labels},
		Rules: ReaderRules(g)}
	roles := s.kube.RbacV1().ClusterRoles()
	if err := upsert(ctx, role, roles.Get, roles.Create, roles.Update, func(have *rbacv1.ClusterRole) { have.Labels, have.Rules = labels, role.Rules }); err != nil {
		return err
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: ReaderRoleName(g), Labels: labels},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: "system:authenticated"}}}
	bindings := s.kube.RbacV1().ClusterRoleBindings()
	return upsert(ctx, binding, bindings.Get, bindings.Create, bindings.Update, func(have *rbacv1.ClusterRoleBinding) {
		have.Labels, have.Subjects = labels, binding.Subjects // the roleRef cannot change
	})
}

func (s *Server) apiService(g Group) *apiregistrationv1.APIService {
	return &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: g.APIServiceName(), Labels: map[string]string{"app.kubernetes.io/managed-by": ManagedBy}},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: g.Name, Version: g.Version,
			Service:  &apiregistrationv1.ServiceReference{Namespace: s.o.Service.Namespace, Name: s.o.Service.Name, Port: ptr.To(s.o.ServicePort)},
			CABundle: s.o.CABundle,
			// As metrics-server: below the built-in groups, first of its group.
			GroupPriorityMinimum: 100,
			VersionPriority:      100,
		},
	}
}

func (s *Server) writeAPIService(ctx context.Context, g Group) error {
	want := s.apiService(g)
	apis := s.apis.ApiregistrationV1().APIServices()
	return upsert(ctx, want, apis.Get, apis.Create, apis.Update, func(have *apiregistrationv1.APIService) {
		have.Labels, have.Spec = want.Labels, want.Spec
	})
}

// unregister deletes the APIServices that still point at the Service.
func (s *Server) unregister(ctx context.Context) {
	apis := s.apis.ApiregistrationV1().APIServices()
	for _, g := range s.o.Groups {
		have, err := apis.Get(ctx, g.APIServiceName(), metav1.GetOptions{})
		if err != nil || have.Spec.Service == nil || have.Spec.Service.Namespace != s.o.Service.Namespace || have.Spec.Service.Name != s.o.Service.Name {
			continue
		}
		if err := apis.Delete(ctx, have.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &have.ResourceVersion}}); err != nil && !apierrors.IsNotFound(err) {
			s.o.Log.Error(err, "remove the APIService", "apiservice", have.Name)
		}
	}
}

// upsert creates want, or gets the object and updates it with set.
func upsert[T metav1.Object](ctx context.Context, want T,
	get func(context.Context, string, metav1.GetOptions) (T, error),
	create func(context.Context, T, metav1.CreateOptions) (T, error),
	update func(context.Context, T, metav1.UpdateOptions) (T, error),
	set func(have T)) error {
	_, err := create(ctx, want, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	have, err := get(ctx, want.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	set(have)
	_, err = update(ctx, have, metav1.UpdateOptions{})
	return err
}
