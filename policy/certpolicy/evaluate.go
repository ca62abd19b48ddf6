package certpolicy

import (
	"fmt"
	"regexp"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
	"flotilla.dev/flotilla/policy/configpolicy/evaluate"
)

// DefaultMinimumDuration applies when a policy sets no minimumDuration
// (upstream's controller default).
const DefaultMinimumDuration = 100 * time.Hour

// Input is everything one evaluation reads.
type Input struct {
	// Policy to evaluate; its status is not read.
	Policy *policyv1.CertificatePolicy
	// Namespaces of the cluster, for the namespaceSelector.
	Namespaces []evaluate.Namespace
	// Secrets of the cluster (of any namespace: those outside the selected
	// namespaces are ignored).
	Secrets []*corev1.Secret
	// Now is the evaluation time.
	Now time.Time
	// DefaultMinimum replaces DefaultMinimumDuration when set.
	DefaultMinimum time.Duration
}

// Result is the verdict of one evaluation.
type Result struct {
	// Status to write (history is the caller's).
	Status policyv1.CertificatePolicyStatus
	// Message is the compliance event text, "<State>; <details>", in
	// upstream's wording.
	Message string
	// Next is when the verdict changes with no change to any object: the
	// earliest moment a certificate that passes now comes within its minimum
	// duration. Zero when no such moment comes.
	Next time.Time
}

// rules are a policy's checks, parsed.
type rules struct {
	min, minCA, max, maxCA time.Duration
	hasMinCA, hasMax       bool
	hasMaxCA               bool
	allowed, disallowed    *regexp.Regexp
	patterns               string // upstream's "Allowed: X Disallowed: Y"
}

// verdict is one certificate's result.
type verdict struct {
	cert                 policyv1.Cert
	expiring, long, sans bool
	unreadable           string
	crossing             time.Time // when it starts expiring (zero: already, or unreadable)
}

// Evaluate checks every certificate of the Secrets in the namespaces the
// policy selects and returns the status, the compliance message and when to
// look again.
func Evaluate(in Input) Result {
	p := in.Policy
	now := in.Now.UTC()
	res := Result{Status: policyv1.CertificatePolicyStatus{LastEvaluated: now.Format(time.RFC3339)}}
	r, err := parseRules(p.Spec, in.DefaultMinimum)
	if err != nil {
		return invalid(res, err.Error())
	}
	selected, err := evaluate.SelectNamespaces(p.Spec.NamespaceSelector, in.Namespaces)
	if err != nil {
		return invalid(res, err.Error())
	}
	sel := labels.Everything()
	if len(p.Spec.LabelSelector) > 0 {
		set := labels.Set{}
		for k, v := range p.Spec.LabelSelector {
			set[k] = string(v)
		}
		sel = labels.SelectorFromSet(set)
	}
	byNs := map[string][]*corev1.Secret{}
	for _, s := range in.Secrets {
		byNs[s.Namespace] = append(byNs[s.Namespace], s)
	}
	details := map[string]policyv1.CertificateCompliancyDetails{}
	verdicts := map[string]map[string]verdict{}
	for _, ns := range selected {
		secrets := byNs[ns]
		sort.Slice(secrets, func(i, j int) bool { return secrets[i].Name < secrets[j].Name })
		bad := map[string]verdict{}
		for _, s := range secrets {
			if !sel.Matches(labels.Set(s.Labels)) || !Holds(s) {
				continue
			}
			v, ok := r.check(s, now)
			if !ok {
				continue
			}
			if v.bad() {
				bad[CertName(s)] = v
			} else if !v.crossing.IsZero() && (res.Next.IsZero() || v.crossing.Before(res.Next)) {
				res.Next = v.crossing
			}
		}
		verdicts[ns] = bad
		details[ns] = nsDetails(ns, bad, r)
	}
	if len(selected) == 0 {
		details[""] = policyv1.CertificateCompliancyDetails{Message: noNamespacesDetail}
	}
	res.Status.CompliancyDetails = details
	res.Status.ComplianceState = policyv1.Compliant
	for _, d := range details {
		if d.NonCompliantCertificates > 0 {
			res.Status.ComplianceState = policyv1.NonCompliant
		}
	}
	res.Message = eventMessage(res.Status.ComplianceState, verdicts, len(selected) == 0, r)
	return res
}

// invalid is the verdict on a policy that cannot be evaluated.
func invalid(res Result, msg string) Result {
	res.Status.ComplianceState = policyv1.NonCompliant
	res.Status.CompliancyDetails = map[string]policyv1.CertificateCompliancyDetails{"": {Message: msg}}
	res.Message = string(policyv1.NonCompliant) + "; " + msg
	return res
}

func parseRules(spec policyv1.CertificatePolicySpec, defaultMin time.Duration) (rules, error) {
	r := rules{min: DefaultMinimumDuration}
	if defaultMin > 0 {
		r.min = defaultMin
	}
	for _, d := range []struct {
		field string
		v     policyv1.CertDuration
		into  *time.Duration
		set   *bool
	}{
		{"minimumDuration", spec.MinimumDuration, &r.min, nil},
		{"minimumCADuration", spec.MinimumCADuration, &r.minCA, &r.hasMinCA},
		{"maximumDuration", spec.MaximumDuration, &r.max, &r.hasMax},
		{"maximumCADuration", spec.MaximumCADuration, &r.maxCA, &r.hasMaxCA},
	} {
		if d.v == "" {
			continue
		}
		v, err := d.v.Duration()
		if err != nil {
			return r, fmt.Errorf("spec.%s: %v", d.field, err)
		}
		*d.into = v
		if d.set != nil {
			*d.set = true
		}
	}
	var err error
	if spec.AllowedSANPattern != "" {
		if r.allowed, err = regexp.Compile(spec.AllowedSANPattern); err != nil {
			return r, fmt.Errorf("spec.allowedSANPattern: %v", err)
		}
		r.patterns = "Allowed: " + spec.AllowedSANPattern
	}
	if spec.DisallowedSANPattern != "" {
		if r.disallowed, err = regexp.Compile(spec.DisallowedSANPattern); err != nil {
			return r, fmt.Errorf("spec.disallowedSANPattern: %v", err)
		}
		r.patterns += " Disallowed: " + spec.DisallowedSANPattern
	}
	return r, nil
}

// check is the verdict on s's certificate; ok is false when s holds no
// certificate data at all (nothing to check).
func (r rules) check(s *corev1.Secret, now time.Time) (verdict, bool) {
	c, err := Parse(s)
	if err == errNoData {
		return verdict{}, false
	}
	v := verdict{cert: policyv1.Cert{Secret: s.Name}}
	if err != nil {
		v.unreadable = err.Error()
		v.cert.Reasons = []string{"cannot be read: " + err.Error()}
		return v, true
	}
	v.cert.Expiration = c.NotAfter.UTC().Format(time.RFC3339)
	v.cert.Expiry = c.NotAfter.Sub(now)
	v.cert.CA = c.IsCA
	v.cert.Duration = c.NotAfter.Sub(c.NotBefore)
	v.cert.Sans = c.DNSNames
	min := r.min
	if r.hasMinCA && c.IsCA {
		min = r.minCA
	}
	// Upstream: expiring when the time left is below the minimum.
	if v.cert.Expiry < min {
		v.expiring = true
		v.cert.Reasons = append(v.cert.Reasons, "expires in less than "+min.String())
	} else {
		v.crossing = c.NotAfter.Add(-min).Add(time.Nanosecond)
	}
	switch {
	case r.hasMaxCA && c.IsCA:
		v.long = v.cert.Duration > r.maxCA
		if v.long {
			v.cert.Reasons = append(v.cert.Reasons, "duration "+v.cert.Duration.String()+" exceeds the maximum "+r.maxCA.String())
		}
	case r.hasMax:
		v.long = v.cert.Duration > r.max
		if v.long {
			v.cert.Reasons = append(v.cert.Reasons, "duration "+v.cert.Duration.String()+" exceeds the maximum "+r.max.String())
		}
	}
	for _, san := range c.DNSNames {
		if r.allowed != nil && !r.allowed.MatchString(san) {
			v.sans = true
			v.cert.Reasons = append(v.cert.Reasons, "SAN "+san+" does not match "+r.allowed.String())
		}
		if r.disallowed != nil && r.disallowed.MatchString(san) {
			v.sans = true
			v.cert.Reasons = append(v.cert.Reasons, "SAN "+san+" matches the disallowed "+r.disallowed.String())
		}
	}
	return v, true
}

func (v verdict) bad() bool { return v.expiring || v.long || v.sans || v.unreadable != "" }

// caRule reports whether a certificate falls under the CA variant of a rule
// (upstream counts it apart only when the CA rule is set).
func caRule(isCA, set bool) bool { return isCA && set }
