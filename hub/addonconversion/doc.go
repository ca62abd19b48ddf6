// Package addonconversion serves addon.open-cluster-management.io v1beta1 beside
// v1alpha1 for ManagedClusterAddOn and ClusterManagementAddOn, as OCM does: v1alpha1
// stays the storage version, and the CRDs' conversion webhook (strategy Webhook,
// path Path on the hub's webhook server) converts between the two.
//
// The field mapping (convert.go) is pure and table-tested; Handler (review.go)
// answers the apiserver's ConversionReviews; Configure (crd.go) points the two
// CRDs at the hub's webhook server with its serving CA bundle.
//
// What maps:
//
//	ManagedClusterAddOn  v1alpha1                          v1beta1
//	  spec.installNamespace                 <-> annotation addon.open-cluster-management.io/v1alpha1-install-namespace
//	  spec.configs                          <-> spec.configs
//	  status.registrations[] signerName kubernetes.io/kube-apiserver-client, subject{user,groups}
//	                                        <-> {type: kubeClient, kubeClient.subject{user,groups}}
//	  status.registrations[] other signerName, subject{user,groups,organizationUnit}
//	                                        <-> {type: customSigner, customSigner{signerName, subject{user,groups,organizationUnits}}}
//	  status.kubeClientDriver               <-> status.registrations[type kubeClient].kubeClient.driver
//	  status.configReferences[] (the deprecated name/namespace is the desired config's)
//	                                        <-> status.configReferences[]
//	  status conditions, relatedObjects, addOnMeta, supportedConfigs, namespace, healthCheck: same
//
//	ClusterManagementAddOn v1alpha1                        v1beta1
//	  spec.supportedConfigs[]{group,resource,defaultConfig}
//	                                        <-> spec.defaultConfigs[]{group,resource,namespace,name}
//	                                            (no defaultConfig: name "__reserved_no_default__")
//	  status.defaultconfigReferences        <-> status.defaultConfigReferences
//	  spec addOnMeta, installStrategy, status installProgressions: same
//
// v1beta1 has no place for the deprecated v1alpha1 fields spec.addOnConfiguration
// (ClusterManagementAddOn), status.addOnConfiguration (ManagedClusterAddOn) and the
// organizationUnit of a kube-apiserver-client registration subject: reading at
// v1beta1 leaves them out, and an update written at v1beta1 clears them (as in OCM).
package addonconversion
