package recorder

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

func TestEntries(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration, msg string) policyv1.ComplianceHistory {
		return policyv1.ComplianceHistory{LastTimestamp: metav1.NewTime(now.Add(d)), Message: msg}
	}
	tmpl := func(raw string) *policyv1.PolicyTemplate {
		t := &policyv1.PolicyTemplate{}
		t.ObjectDefinition.Raw = []byte(raw)
		return t
	}
	replica := func(details ...*policyv1.DetailsPerTemplate) *policyv1.Policy {
		return &policyv1.Policy{
			ObjectMeta: metav1.ObjectMeta{Namespace: "east", Name: "team-b.p", Labels: map[string]string{policyv1.RootPolicyLabel: "team-b.p"}},
			Spec: policyv1.PolicySpec{PolicyTemplates: []*policyv1.PolicyTemplate{
				tmpl(`{"kind":"ConfigurationPolicy","metadata":{"name":"encryption"}}`), nil, tmpl(`{"kind":"ConfigurationPolicy"}`)}},
			Status: policyv1.PolicyStatus{Details: details},
		}
	}
	detail := func(name string, h ...policyv1.ComplianceHistory) *policyv1.DetailsPerTemplate {
		return &policyv1.DetailsPerTemplate{TemplateMeta: metav1.ObjectMeta{Name: name}, History: h}
	}
	var many []policyv1.ComplianceHistory
	for i := range 50 {
		many = append(many, at(-time.Duration(50-i)*time.Minute, fmt.Sprintf("Compliant; entry %d", i)))
	}
	long := "NonCompliant; " + strings.Repeat("é", MaxMessageBytes)

	for _, tc := range []struct {
		name string
		p    *policyv1.Policy
		want []string // template: message
	}{
		{"a template of the spec", replica(detail("encryption", at(-time.Hour, "NonCompliant; a"))), []string{"encryption: NonCompliant; a"}},
		{"a template without a name, by index", replica(detail("template-2", at(-time.Hour, "NonCompliant; unreadable"))), []string{"template-2: NonCompliant; unreadable"}},
		{"a template the spec does not carry", replica(detail("invented", at(-time.Hour, "Compliant; forged")), detail("template-1", at(-time.Hour, "Compliant; forged"))), nil},
		{"a template twice: the first", replica(detail("encryption", at(-time.Hour, "NonCompliant; first")), detail("encryption", at(-time.Minute, "Compliant; second"))),
			[]string{"encryption: NonCompliant; first"}},
		{"an entry after now beyond the skew", replica(detail("encryption", at(24*365*time.Hour, "Compliant; forever"), at(MaxClockSkew, "Compliant; within the skew"))),
			[]string{"encryption: Compliant; within the skew"}},
		{"only the ten newest", replica(detail("encryption", many...)), func() []string {
			var out []string
			for i := 40; i <= 49; i++ { // oldest first
				out = append(out, fmt.Sprintf("encryption: Compliant; entry %d", i))
			}
			return out
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range entries(tc.p, now) {
				got = append(got, e.Template+": "+e.Message)
			}
			assert.Equal(t, tc.want, got)
		})
	}
	t.Run("a long message is cut at a character", func(t *testing.T) {
		got := entries(replica(detail("encryption", at(-time.Hour, long))), now)
		if assert.Len(t, got, 1) {
			assert.LessOrEqual(t, len(got[0].Message), MaxMessageBytes)
			assert.True(t, strings.HasPrefix(got[0].Message, "NonCompliant; éé"))
			assert.True(t, strings.HasSuffix(got[0].Message, "é..."), "cut between characters: %q", got[0].Message[len(got[0].Message)-8:])
		}
	})
}
