package certpolicy

import (
	"fmt"
	"sort"
	"strings"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// Messages in upstream's wording (cert-policy-controller), certificates
// listed in name order where upstream's order is a map's. Flotilla adds one
// category upstream has not: certificates that cannot be read (upstream logs
// them and skips the Secret).

// noNamespacesDetail is the detail of a policy that selects no namespace.
const noNamespacesDetail = "Found 0 non compliant certificates, no namespaces were selected.\n"

// NoNamespacesMessage ends the compliance message of a policy that selects
// no namespace.
const NoNamespacesMessage = "No namespaces matched the namespace selector."

// nsDetails is the status of one namespace and its upstream message:
// "Found N non compliant certificates in the namespace NS.\n" and, when N > 0,
// "List of non compliant certificates:\n" with a line per problem.
func nsDetails(ns string, bad map[string]verdict, r rules) policyv1.CertificateCompliancyDetails {
	var b strings.Builder
	fmt.Fprintf(&b, "Found %d non compliant certificates in the namespace %s.\n", len(bad), ns)
	d := policyv1.CertificateCompliancyDetails{NonCompliantCertificates: int64(len(bad))}
	if len(bad) > 0 {
		b.WriteString("List of non compliant certificates:\n")
		d.NonCompliantCertificatesList = map[string]policyv1.Cert{}
		for _, name := range sortedNames(bad) {
			v := bad[name]
			d.NonCompliantCertificatesList[name] = v.cert
			if v.unreadable != "" {
				fmt.Fprintf(&b, "%s cannot be read: %s\n", name, v.unreadable)
				continue
			}
			if v.expiring {
				fmt.Fprintf(&b, "%s expires on %s\n", name, v.cert.Expiration)
			}
			if v.long {
				fmt.Fprintf(&b, "%s duration too long %s\n", name, v.cert.Duration.String())
			}
			if v.sans {
				fmt.Fprintf(&b, "%s SAN entry found not matching pattern %s\n", name, r.patterns)
			}
		}
	}
	d.Message = b.String()
	return d
}

// eventMessage is the compliance event text, upstream's
// "NonCompliant; N certificates expire in less than 100h0m0s: ns:secret, ...\n"
// with a category per check (namespaces sorted), "Compliant", or
// "Compliant; No namespaces matched the namespace selector.".
func eventMessage(state policyv1.ComplianceState, verdicts map[string]map[string]verdict, none bool, r rules) string {
	if state == policyv1.Compliant {
		if none {
			return string(state) + "; " + NoNamespacesMessage
		}
		return string(state)
	}
	type category struct {
		format string
		limit  string
		items  []string
	}
	cats := []*category{
		{format: "%d certificates expire in less than %s: %s\n", limit: r.min.String()},
		{format: " %d CA certificates expire in less than %s: %s\n", limit: r.minCA.String()},
		{format: " %d certificates exceed the maximum duration of %s: %s\n", limit: r.max.String()},
		{format: " %d CA certificates exceed the maximum duration of %s: %s\n", limit: r.maxCA.String()},
		{format: " %d certificates defined SAN entries do not match pattern %s: %s\n", limit: r.patterns},
		{format: " %d certificates cannot be read%s: %s\n"},
	}
	namespaces := make([]string, 0, len(verdicts))
	for ns := range verdicts {
		namespaces = append(namespaces, ns)
	}
	sort.Strings(namespaces)
	for _, ns := range namespaces {
		bad := verdicts[ns]
		for _, name := range sortedNames(bad) {
			v := bad[name]
			item := ns + ":" + v.cert.Secret
			if v.unreadable != "" {
				cats[5].items = append(cats[5].items, item)
				continue
			}
			if v.expiring {
				i := 0
				if caRule(v.cert.CA, r.hasMinCA) {
					i = 1
				}
				cats[i].items = append(cats[i].items, item)
			}
			if v.long {
				i := 2
				if caRule(v.cert.CA, r.hasMaxCA) {
					i = 3
				}
				cats[i].items = append(cats[i].items, item)
			}
			if v.sans {
				cats[4].items = append(cats[4].items, item)
			}
		}
	}
	var b strings.Builder
	for _, c := range cats {
		if len(c.items) > 0 {
			fmt.Fprintf(&b, c.format, len(c.items), c.limit, strings.Join(c.items, ", "))
		}
	}
	return string(state) + "; " + b.String()
}

func sortedNames(m map[string]verdict) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
