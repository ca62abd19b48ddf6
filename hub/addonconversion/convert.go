package addonconversion

import (
	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	addonv1alpha1 "open-cluster-management.io/api/addon/v1alpha1"
	addonv1beta1 "open-cluster-management.io/api/addon/v1beta1"
)

const (
	// InstallNamespaceAnnotation carries v1alpha1's spec.installNamespace on a
	// v1beta1 ManagedClusterAddOn (v1beta1 has no such field). OCM's name.
	InstallNamespaceAnnotation = addonv1beta1.InstallNamespaceAnnotation
	// NoDefaultConfigName is the name a v1beta1 defaultConfigs entry carries for a
	// v1alpha1 supportedConfigs entry without defaultConfig. OCM's sentinel: it
	// can never be a real object's name.
	NoDefaultConfigName = addonv1beta1.ReservedNoDefaultConfigName
)

var (
	// V1alpha1 and V1beta1 are the two served versions of the addon group.
	V1alpha1 = addonv1alpha1.GroupVersion.String()
	V1beta1  = addonv1beta1.GroupVersion.String()
)

// ManagedClusterAddOnToV1beta1 converts a stored ManagedClusterAddOn to v1beta1.
func ManagedClusterAddOnToV1beta1(in *addonv1alpha1.ManagedClusterAddOn) *addonv1beta1.ManagedClusterAddOn {
	out := &addonv1beta1.ManagedClusterAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1beta1, Kind: "ManagedClusterAddOn"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	if in.Spec.InstallNamespace != "" {
		if out.Annotations == nil {
			out.Annotations = map[string]string{}
		}
		out.Annotations[InstallNamespaceAnnotation] = in.Spec.InstallNamespace
	}
	out.Spec.Configs = addOnConfigsToV1beta1(in.Spec.Configs)

	st := &in.Status
	out.Status = addonv1beta1.ManagedClusterAddOnStatus{
		Conditions:  conditions(st.Conditions),
		AddOnMeta:   addonv1beta1.AddOnMeta(st.AddOnMeta),
		Namespace:   st.Namespace,
		HealthCheck: addonv1beta1.HealthCheck{Mode: addonv1beta1.HealthCheckMode(st.HealthCheck.Mode)},
		RelatedObjects: mapSlice(st.RelatedObjects, func(o addonv1alpha1.ObjectReference) addonv1beta1.ObjectReference {
			return addonv1beta1.ObjectReference(o)
		}),
		SupportedConfigs: mapSlice(st.SupportedConfigs, func(g addonv1alpha1.ConfigGroupResource) addonv1beta1.ConfigGroupResource {
			return addonv1beta1.ConfigGroupResource(g)
		}),
		ConfigReferences: mapSlice(st.ConfigReferences, func(r addonv1alpha1.ConfigReference) addonv1beta1.ConfigReference {
			return addonv1beta1.ConfigReference{
				ConfigGroupResource:    addonv1beta1.ConfigGroupResource(r.ConfigGroupResource),
				LastObservedGeneration: r.LastObservedGeneration,
				DesiredConfig:          specHashToV1beta1(r.DesiredConfig),
				LastAppliedConfig:      specHashToV1beta1(r.LastAppliedConfig),
			}
		}),
		Registrations: mapSlice(st.Registrations, func(r addonv1alpha1.RegistrationConfig) addonv1beta1.RegistrationConfig {
			return registrationToV1beta1(r, st.KubeClientDriver)
		}),
	}
	return out
}

// ManagedClusterAddOnToV1alpha1 converts a v1beta1 ManagedClusterAddOn to the
// stored version.
func ManagedClusterAddOnToV1alpha1(in *addonv1beta1.ManagedClusterAddOn) *addonv1alpha1.ManagedClusterAddOn {
	out := &addonv1alpha1.ManagedClusterAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ManagedClusterAddOn"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	if ns, ok := out.Annotations[InstallNamespaceAnnotation]; ok {
		out.Spec.InstallNamespace = ns
		delete(out.Annotations, InstallNamespaceAnnotation)
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
	}
	out.Spec.Configs = addOnConfigsToV1alpha1(in.Spec.Configs)

	st := &in.Status
	out.Status = addonv1alpha1.ManagedClusterAddOnStatus{
		Conditions:  conditions(st.Conditions),
		AddOnMeta:   addonv1alpha1.AddOnMeta(st.AddOnMeta),
		Namespace:   st.Namespace,
		HealthCheck: addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthCheckMode(st.HealthCheck.Mode)},
		RelatedObjects: mapSlice(st.RelatedObjects, func(o addonv1beta1.ObjectReference) addonv1alpha1.ObjectReference {
			return addonv1alpha1.ObjectReference(o)
		}),
		SupportedConfigs: mapSlice(st.SupportedConfigs, func(g addonv1beta1.ConfigGroupResource) addonv1alpha1.ConfigGroupResource {
			return addonv1alpha1.ConfigGroupResource(g)
		}),
		ConfigReferences: mapSlice(st.ConfigReferences, func(r addonv1beta1.ConfigReference) addonv1alpha1.ConfigReference {
			out := addonv1alpha1.ConfigReference{
				ConfigGroupResource:    addonv1alpha1.ConfigGroupResource(r.ConfigGroupResource),
				LastObservedGeneration: r.LastObservedGeneration,
				DesiredConfig:          specHashToV1alpha1(r.DesiredConfig),
				LastAppliedConfig:      specHashToV1alpha1(r.LastAppliedConfig),
			}
			if out.DesiredConfig != nil {
				// The deprecated referent names the desired config.
				out.ConfigReferent = out.DesiredConfig.ConfigReferent
			}
			return out
		}),
		Registrations: mapSlice(st.Registrations, registrationToV1alpha1),
	}
	for _, r := range st.Registrations {
		if r.Type == addonv1beta1.KubeClient && r.KubeClient != nil {
			out.Status.KubeClientDriver = r.KubeClient.Driver
			break
		}
	}
	return out
}

// ClusterManagementAddOnToV1beta1 converts a stored ClusterManagementAddOn to v1beta1.
func ClusterManagementAddOnToV1beta1(in *addonv1alpha1.ClusterManagementAddOn) *addonv1beta1.ClusterManagementAddOn {
	out := &addonv1beta1.ClusterManagementAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1beta1, Kind: "ClusterManagementAddOn"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	out.Spec = addonv1beta1.ClusterManagementAddOnSpec{
		AddOnMeta: addonv1beta1.AddOnMeta(in.Spec.AddOnMeta),
		DefaultConfigs: mapSlice(in.Spec.SupportedConfigs, func(c addonv1alpha1.ConfigMeta) addonv1beta1.AddOnConfig {
			out := addonv1beta1.AddOnConfig{ConfigGroupResource: addonv1beta1.ConfigGroupResource(c.ConfigGroupResource)}
			out.ConfigReferent.Name = NoDefaultConfigName
			if c.DefaultConfig != nil {
				out.ConfigReferent = addonv1beta1.ConfigReferent(*c.DefaultConfig)
			}
			return out
		}),
		InstallStrategy: addonv1beta1.InstallStrategy{
			Type: in.Spec.InstallStrategy.Type,
			Placements: mapSlice(in.Spec.InstallStrategy.Placements, func(p addonv1alpha1.PlacementStrategy) addonv1beta1.PlacementStrategy {
				return addonv1beta1.PlacementStrategy{
					PlacementRef:    addonv1beta1.PlacementRef(p.PlacementRef),
					Configs:         addOnConfigsToV1beta1(p.Configs),
					RolloutStrategy: *p.RolloutStrategy.DeepCopy(),
				}
			}),
		},
	}
	out.Status = addonv1beta1.ClusterManagementAddOnStatus{
		DefaultConfigReferences: mapSlice(in.Status.DefaultConfigReferences, func(r addonv1alpha1.DefaultConfigReference) addonv1beta1.DefaultConfigReference {
			return addonv1beta1.DefaultConfigReference{
				ConfigGroupResource: addonv1beta1.ConfigGroupResource(r.ConfigGroupResource),
				DesiredConfig:       specHashToV1beta1(r.DesiredConfig),
			}
		}),
		InstallProgressions: mapSlice(in.Status.InstallProgressions, func(p addonv1alpha1.InstallProgression) addonv1beta1.InstallProgression {
			return addonv1beta1.InstallProgression{
				PlacementRef: addonv1beta1.PlacementRef(p.PlacementRef),
				Conditions:   conditions(p.Conditions),
				ConfigReferences: mapSlice(p.ConfigReferences, func(r addonv1alpha1.InstallConfigReference) addonv1beta1.InstallConfigReference {
					return addonv1beta1.InstallConfigReference{
						ConfigGroupResource: addonv1beta1.ConfigGroupResource(r.ConfigGroupResource),
						DesiredConfig:       specHashToV1beta1(r.DesiredConfig),
						LastKnownGoodConfig: specHashToV1beta1(r.LastKnownGoodConfig),
						LastAppliedConfig:   specHashToV1beta1(r.LastAppliedConfig),
					}
				}),
			}
		}),
	}
	return out
}

// ClusterManagementAddOnToV1alpha1 converts a v1beta1 ClusterManagementAddOn to
// the stored version.
func ClusterManagementAddOnToV1alpha1(in *addonv1beta1.ClusterManagementAddOn) *addonv1alpha1.ClusterManagementAddOn {
	out := &addonv1alpha1.ClusterManagementAddOn{
		TypeMeta:   metav1.TypeMeta{APIVersion: V1alpha1, Kind: "ClusterManagementAddOn"},
		ObjectMeta: *in.ObjectMeta.DeepCopy(),
	}
	out.Spec = addonv1alpha1.ClusterManagementAddOnSpec{
		AddOnMeta: addonv1alpha1.AddOnMeta(in.Spec.AddOnMeta),
		SupportedConfigs: mapSlice(in.Spec.DefaultConfigs, func(c addonv1beta1.AddOnConfig) addonv1alpha1.ConfigMeta {
			out := addonv1alpha1.ConfigMeta{ConfigGroupResource: addonv1alpha1.ConfigGroupResource(c.ConfigGroupResource)}
			if c.Name != "" && c.Name != NoDefaultConfigName {
				out.DefaultConfig = &addonv1alpha1.ConfigReferent{Namespace: c.Namespace, Name: c.Name}
			}
			return out
		}),
		InstallStrategy: addonv1alpha1.InstallStrategy{
			Type: in.Spec.InstallStrategy.Type,
			Placements: mapSlice(in.Spec.InstallStrategy.Placements, func(p addonv1beta1.PlacementStrategy) addonv1alpha1.PlacementStrategy {
				return addonv1alpha1.PlacementStrategy{
					PlacementRef:    addonv1alpha1.PlacementRef(p.PlacementRef),
					Configs:         addOnConfigsToV1alpha1(p.Configs),
					RolloutStrategy: *p.RolloutStrategy.DeepCopy(),
				}
			}),
		},
	}
	out.Status = addonv1alpha1.ClusterManagementAddOnStatus{
		DefaultConfigReferences: mapSlice(in.Status.DefaultConfigReferences, func(r addonv1beta1.DefaultConfigReference) addonv1alpha1.DefaultConfigReference {
			return addonv1alpha1.DefaultConfigReference{
				ConfigGroupResource: addonv1alpha1.ConfigGroupResource(r.ConfigGroupResource),
				DesiredConfig:       specHashToV1alpha1(r.DesiredConfig),
			}
		}),
		InstallProgressions: mapSlice(in.Status.InstallProgressions, func(p addonv1beta1.InstallProgression) addonv1alpha1.InstallProgression {
			return addonv1alpha1.InstallProgression{
				PlacementRef: addonv1alpha1.PlacementRef(p.PlacementRef),
				Conditions:   conditions(p.Conditions),
				ConfigReferences: mapSlice(p.ConfigReferences, func(r addonv1beta1.InstallConfigReference) addonv1alpha1.InstallConfigReference {
					return addonv1alpha1.InstallConfigReference{
						ConfigGroupResource: addonv1alpha1.ConfigGroupResource(r.ConfigGroupResource),
						DesiredConfig:       specHashToV1alpha1(r.DesiredConfig),
						LastKnownGoodConfig: specHashToV1alpha1(r.LastKnownGoodConfig),
						LastAppliedConfig:   specHashToV1alpha1(r.LastAppliedConfig),
					}
				}),
			}
		}),
	}
	return out
}

// registrationToV1beta1: a kube-apiserver-client registration becomes type
// kubeClient (carrying the status-level driver), any other signer customSigner.
func registrationToV1beta1(in addonv1alpha1.RegistrationConfig, driver string) addonv1beta1.RegistrationConfig {
	base := addonv1beta1.BaseSubject{User: in.Subject.User, Groups: clone(in.Subject.Groups)}
	if in.SignerName == certificatesv1.KubeAPIServerClientSignerName {
		return addonv1beta1.RegistrationConfig{Type: addonv1beta1.KubeClient, KubeClient: &addonv1beta1.KubeClientConfig{
			Subject: addonv1beta1.KubeClientSubject{BaseSubject: base}, Driver: driver}}
	}
	return addonv1beta1.RegistrationConfig{Type: addonv1beta1.CustomSigner, CustomSigner: &addonv1beta1.CustomSignerConfig{
		SignerName: in.SignerName,
		Subject:    addonv1beta1.Subject{BaseSubject: base, OrganizationUnits: clone(in.Subject.OrganizationUnits)}}}
}

func registrationToV1alpha1(in addonv1beta1.RegistrationConfig) addonv1alpha1.RegistrationConfig {
	var out addonv1alpha1.RegistrationConfig
	switch {
	case in.Type == addonv1beta1.KubeClient:
		out.SignerName = certificatesv1.KubeAPIServerClientSignerName
		if in.KubeClient != nil {
			out.Subject = addonv1alpha1.Subject{User: in.KubeClient.Subject.User, Groups: clone(in.KubeClient.Subject.Groups)}
		}
	case in.CustomSigner != nil:
		s := in.CustomSigner.Subject
		out.SignerName = in.CustomSigner.SignerName
		out.Subject = addonv1alpha1.Subject{User: s.User, Groups: clone(s.Groups), OrganizationUnits: clone(s.OrganizationUnits)}
	}
	return out
}

func addOnConfigsToV1beta1(in []addonv1alpha1.AddOnConfig) []addonv1beta1.AddOnConfig {
	return mapSlice(in, func(c addonv1alpha1.AddOnConfig) addonv1beta1.AddOnConfig {
		return addonv1beta1.AddOnConfig{ConfigGroupResource: addonv1beta1.ConfigGroupResource(c.ConfigGroupResource), ConfigReferent: addonv1beta1.ConfigReferent(c.ConfigReferent)}
	})
}

func addOnConfigsToV1alpha1(in []addonv1beta1.AddOnConfig) []addonv1alpha1.AddOnConfig {
	return mapSlice(in, func(c addonv1beta1.AddOnConfig) addonv1alpha1.AddOnConfig {
		return addonv1alpha1.AddOnConfig{ConfigGroupResource: addonv1alpha1.ConfigGroupResource(c.ConfigGroupResource), ConfigReferent: addonv1alpha1.ConfigReferent(c.ConfigReferent)}
	})
}

func specHashToV1beta1(in *addonv1alpha1.ConfigSpecHash) *addonv1beta1.ConfigSpecHash {
	if in == nil {
		return nil
	}
	return &addonv1beta1.ConfigSpecHash{ConfigReferent: addonv1beta1.ConfigReferent(in.ConfigReferent), SpecHash: in.SpecHash}
}

func specHashToV1alpha1(in *addonv1beta1.ConfigSpecHash) *addonv1alpha1.ConfigSpecHash {
	if in == nil {
		return nil
	}
	return &addonv1alpha1.ConfigSpecHash{ConfigReferent: addonv1alpha1.ConfigReferent(in.ConfigReferent), SpecHash: in.SpecHash}
}

func conditions(in []metav1.Condition) []metav1.Condition {
	return mapSlice(in, func(c metav1.Condition) metav1.Condition { return *c.DeepCopy() })
}

// mapSlice maps each element; nil stays nil, so absent lists stay absent.
func mapSlice[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i := range in {
		out[i] = f(in[i])
	}
	return out
}

func clone(in []string) []string {
	if in == nil {
		return nil
	}
	return append([]string{}, in...)
}
