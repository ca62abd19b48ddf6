package compliance

import (
	"bytes"
	"testing"

	policyv1 "flotilla.dev/flotilla/api/policy/v1"
)

// FuzzClassify: any annotation values classify without a panic, every policy
// lands somewhere in the report, and every renderer accepts the result.
func FuzzClassify(f *testing.F) {
	f.Add("NIST SP 800-53", "CM Configuration Management", "CM-2 Baseline Configuration")
	f.Add("NIST-CSF", "PR.PT", "PR.PT-3 Least Functionality, AC-6 (1)")
	f.Add(",,", " , ", "AC-99999999999999999999(1)")
	f.Add("", "", "SI-4.2, -1, (1), ac-")
	f.Fuzz(func(t *testing.T, standards, categories, controls string) {
		p := root("ns", "p").annotate(standards, categories, controls).on("c1", policyv1.NonCompliant).obj()
		r := Build(Input{Roots: []policyv1.Policy{p}, Now: t0}, Filter{})
		found := false
		r.eachControl(func(_ *Standard, _ *Family, c *Control) {
			for _, pol := range c.Policies {
				found = found || pol == "ns/p"
			}
		})
		if !found {
			t.Fatalf("policy with %q / %q / %q is in no control", standards, categories, controls)
		}
		for _, format := range Formats {
			if err := Render(&bytes.Buffer{}, format, r, RenderOptions{}); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
		}
	})
}
