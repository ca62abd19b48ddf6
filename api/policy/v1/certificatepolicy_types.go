package v1

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CertDuration is a Go duration ("300h", "2h45m", "1.5h"): at most 3 parts
// of up to 5 digits each, so that every admitted value parses without
// overflow (99999h is about 11 years; "87600h87600h" is 20). The schema
// refuses anything else, so an engine never meets a duration it cannot read.
// +kubebuilder:validation:Pattern=`^(?:[0-9]{1,5}(?:\.[0-9]{1,9})?(?:h|m|s|ms|us|ns)){1,3}$`
type CertDuration string

// Duration parses d; "" is 0. An error names the value.
func (d CertDuration) Duration() (time.Duration, error) {
	if d == "" {
		return 0, nil
	}
	v, err := time.ParseDuration(string(d))
	if err != nil {
		return 0, fmt.Errorf("duration %q: %w", string(d), err)
	}
	return v, nil
}

// CertificatePolicySpec says which Secrets hold the certificates to check and
// what they must satisfy (the fields of OCM's cert-policy-controller). It is
// inform only: enforce is accepted and reports as inform does.
type CertificatePolicySpec struct {
	// RemediationAction is accepted for compatibility; the policy only informs.
	// +optional
	RemediationAction RemediationAction `json:"remediationAction,omitempty"`
	// Severity of a violation: low, medium, high or critical.
	// +optional
	Severity Severity `json:"severity,omitempty"`
	// NamespaceSelector picks the namespaces whose Secrets are checked:
	// include and exclude globs (exclude wins) and matchLabels and
	// matchExpressions. Without include or a label selector, no namespace.
	// +optional
	NamespaceSelector Target `json:"namespaceSelector,omitempty"`
	// LabelSelector narrows the Secrets to those carrying all these labels.
	// +optional
	LabelSelector map[string]NonEmptyString `json:"labelSelector,omitempty"`
	// MinimumDuration: a certificate expiring sooner than this is
	// non-compliant. Default 100h.
	// +optional
	MinimumDuration CertDuration `json:"minimumDuration,omitempty"`
	// MinimumCADuration replaces MinimumDuration for CA certificates.
	// +optional
	MinimumCADuration CertDuration `json:"minimumCADuration,omitempty"`
	// MaximumDuration: a certificate valid (notAfter - notBefore) for longer
	// than this is non-compliant.
	// +optional
	MaximumDuration CertDuration `json:"maximumDuration,omitempty"`
	// MaximumCADuration replaces MaximumDuration for CA certificates.
	// +optional
	MaximumCADuration CertDuration `json:"maximumCADuration,omitempty"`
	// AllowedSANPattern is a Go regular expression every DNS SAN of a
	// certificate must match.
	// +kubebuilder:validation:MinLength=1
	// +optional
	AllowedSANPattern string `json:"allowedSANPattern,omitempty"`
	// DisallowedSANPattern is a Go regular expression no DNS SAN of a
	// certificate may match.
	// +kubebuilder:validation:MinLength=1
	// +optional
	DisallowedSANPattern string `json:"disallowedSANPattern,omitempty"`
}

// Cert is one non-compliant certificate (field names as upstream's).
type Cert struct {
	// Secret holding the certificate.
	Secret string `json:"secretName,omitempty"`
	// Expiration is notAfter, RFC 3339 in UTC.
	Expiration string `json:"expiration,omitempty"`
	// Expiry is the time left at evaluation, in nanoseconds.
	Expiry time.Duration `json:"expiry,omitempty"`
	// CA is true for a CA certificate.
	CA bool `json:"ca,omitempty"`
	// Duration is notAfter - notBefore, in nanoseconds.
	Duration time.Duration `json:"duration,omitempty"`
	// Sans are the certificate's DNS names.
	Sans []string `json:"sans,omitempty"`
	// Reasons says which checks failed, e.g. "expires in less than 100h0m0s"
	// (Flotilla's addition; upstream leaves it to the message).
	Reasons []string `json:"reasons,omitempty"`
}

// CertificateCompliancyDetails is the verdict for one namespace.
type CertificateCompliancyDetails struct {
	// NonCompliantCertificates counts the certificates in
	// NonCompliantCertificatesList.
	// +kubebuilder:validation:Minimum=0
	NonCompliantCertificates int64 `json:"nonCompliantCertificates,omitempty"`
	// NonCompliantCertificatesList is keyed by the certificate's name: its
	// Secret's "certificate-name" or "certmanager.k8s.io/certificate-name"
	// label, else the Secret's name.
	NonCompliantCertificatesList map[string]Cert `json:"nonCompliantCertificatesList,omitempty"`
	// Message sums up the namespace, in upstream's wording.
	Message string `json:"message,omitempty"`
}

// CertificatePolicyStatus is what the engine last found.
type CertificatePolicyStatus struct {
	// ComplianceState of the whole policy.
	ComplianceState ComplianceState `json:"compliant,omitempty"`
	// CompliancyDetails per selected namespace ("" when none is selected).
	CompliancyDetails map[string]CertificateCompliancyDetails `json:"compliancyDetails,omitempty"`
	// LastEvaluated is the RFC 3339 time of the evaluation that wrote this
	// status (Flotilla's addition).
	// +optional
	LastEvaluated string `json:"lastEvaluated,omitempty"`
	// History of compliance changes, newest first, at most 10 (Flotilla's
	// addition; the compliance events say the same).
	// +optional
	History []ComplianceHistory `json:"history,omitempty"`
}

// CertificatePolicy checks the TLS certificates held in Secrets (type
// kubernetes.io/tls, or any Secret with a tls.crt key, or the key its
// certificate_key_name label names) against expiry, lifetime and SAN rules.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=certificatepolicies,scope=Namespaced
// +kubebuilder:printcolumn:name="Compliance",type=string,JSONPath=`.status.compliant`
// +kubebuilder:printcolumn:name="Severity",type=string,JSONPath=`.spec.severity`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CertificatePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CertificatePolicySpec   `json:"spec,omitempty"`
	Status CertificatePolicyStatus `json:"status,omitempty"`
}

// CertificatePolicyList is a list of CertificatePolicies.
//
// +kubebuilder:object:root=true
type CertificatePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CertificatePolicy `json:"items"`
}

func init() { register(&CertificatePolicy{}, &CertificatePolicyList{}) }
