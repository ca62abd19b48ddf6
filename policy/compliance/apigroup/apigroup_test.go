package apigroup_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"flotilla.dev/flotilla/internal/pki"
	"flotilla.dev/flotilla/policy/compliance/apigroup"
	"flotilla.dev/flotilla/policy/compliance/document"
	"flotilla.dev/flotilla/policy/compliance/history"
)

// Discovery through the hub apiserver lists the group's resources: what
// `kubectl api-resources` and the APIService's availability read.
func TestDiscovery(t *testing.T) {
	list, err := kubernetes.NewForConfigOrDie(userConfig(t, "bob")).Discovery().ServerResourcesForGroupVersion(apigroup.Group + "/" + apigroup.Version)
	require.NoError(t, err)
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name+"/"+r.Kind)
	}
	assert.ElementsMatch(t, []string{"reports/ComplianceReport", "histories/ComplianceHistory", "verifications/ComplianceVerification"}, names)

	// The apiserver's aggregated discovery (what kubectl api-resources reads)
	// holds the group too, once its discovery manager has read the server.
	require.Eventually(t, func() bool {
		_, lists, err := kubernetes.NewForConfigOrDie(userConfig(t, "bob")).Discovery().ServerGroupsAndResources()
		if err != nil {
			return false
		}
		for _, l := range lists {
			if l.GroupVersion == apigroup.Group+"/"+apigroup.Version && len(l.APIResources) == 3 {
				return true
			}
		}
		return false
	}, 30*time.Second, 200*time.Millisecond, "compliance.flotilla.dev in the apiserver's discovery")

	err = kubernetes.NewForConfigOrDie(userConfig(t, "bob")).Discovery().RESTClient().Get().AbsPath(apigroup.ReportsPath, "some-name").Do(context.Background()).Error()
	assert.True(t, apierrors.IsNotFound(err), "the documents have no names: %v", err)
}

// Each user reads, through the hub apiserver, the report and the history of
// the namespaces they may list policies in: alice ns1's, bob nothing.
func TestReadAsUsers(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		user            string
		report, history []string
		violations      []string
	}{
		{user: "alice", report: []string{"ns1/policy-ns1"}, history: []string{"ns1/policy-ns1"}, violations: []string{"NonCompliant; violation - secret of ns1"}},
		{user: "bob"},
	} {
		t.Run(tc.user, func(t *testing.T) {
			c, err := apigroup.NewClient(userConfig(t, tc.user))
			require.NoError(t, err)
			doc, err := c.Report(ctx, url.Values{"since": {"30d"}})
			require.NoError(t, err)
			report, violations := policies(doc)
			assert.Equal(t, tc.report, report)
			assert.Equal(t, tc.violations, violations, "a replica's messages go with its root")
			require.NotNil(t, doc.History)
			assert.Equal(t, tc.history, changed(doc.History.Changes))

			h, err := c.History(ctx, url.Values{"since": {"30d"}, "cluster": {"east"}})
			require.NoError(t, err)
			assert.Equal(t, tc.history, changed(h.Changes))
			assert.Equal(t, "east", h.Cluster)
			if tc.user == "alice" {
				require.NotNil(t, h.LastBecameNonCompliant)
				assert.Equal(t, now.Add(-2*24*time.Hour).Unix(), h.LastBecameNonCompliant.Unix(), "ns1's break 2 days ago, not ns2's 3 days ago")
				assert.Empty(t, h.Remediations, "ns2's remediation is not alice's to see")
			} else {
				assert.Nil(t, h.LastBecameNonCompliant)
				assert.Empty(t, h.Clusters)
			}
		})
	}
}

// The query parameters of the live page, baseline included, work through
// the hub apiserver; a wrong one is a 400 naming it.
func TestQueryParameters(t *testing.T) {
	ctx := context.Background()
	c, err := apigroup.NewClient(userConfig(t, "alice"))
	require.NoError(t, err)
	doc, err := c.Report(ctx, url.Values{"baseline": {"moderate"}, "since": {"1h"}, "control": {"CM"}})
	require.NoError(t, err)
	require.NotNil(t, doc.Report.Baseline)
	assert.Equal(t, "NIST SP 800-53 rev5 MODERATE", doc.Report.Baseline.Baseline)
	require.NotNil(t, doc.History, "baseline and since together")

	for q, want := range map[string]string{
		"since=yesterday-ish":  `query parameter since "yesterday-ish"`,
		"baseline=/etc/passwd": `query parameter baseline "/etc/passwd"`,
		"clusters=East_1":      `query parameter clusters: item 1 "East_1" is not a cluster name`,
		"cluster=east":         `query parameter "cluster" is not known`,
	} {
		vals, _ := url.ParseQuery(q)
		_, err := c.Report(ctx, vals)
		require.Error(t, err, q)
		assert.True(t, apierrors.IsBadRequest(err), "%s: %v", q, err)
		assert.Contains(t, err.Error(), want)
	}
	_, err = c.History(ctx, url.Values{"policy": {"not-a-policy"}})
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
	assert.ErrorContains(t, err, `query parameter policy "not-a-policy"`)
}

// The aggregated server trusts identity headers only from the hub
// apiserver's front-proxy certificate: a forged X-Remote-User without it is
// 401, discovery included.
func TestRefusesWithoutFrontProxyCertificate(t *testing.T) {
	// A client certificate with the front proxy's name from another CA.
	other, err := pki.NewCA("not-the-front-proxy-ca", time.Hour)
	require.NoError(t, err)
	kp, err := other.Issue(pki.CertRequest{CommonName: "front-proxy-client", Client: true})
	require.NoError(t, err)
	forged, err := tls.X509KeyPair(kp.CertPEM, kp.KeyPEM)
	require.NoError(t, err)
	// The hub apiserver's own front-proxy certificate: the same request passes.
	proxy, err := tls.LoadX509KeyPair(filepath.Join(hubPKI, "front-proxy-client.crt"), filepath.Join(hubPKI, "front-proxy-client.key"))
	require.NoError(t, err)

	get := func(t *testing.T, path string, certs ...tls.Certificate) (int, string) {
		hc := &http.Client{Transport: &http.Transport{TLSClientConfig: insecureClient(certs...)}}
		req, err := http.NewRequest(http.MethodGet, direct+path, nil)
		require.NoError(t, err)
		req.Header.Set("X-Remote-User", "system:admin")
		req.Header.Set("X-Remote-Group", "system:masters")
		resp, err := hc.Do(req)
		require.NoError(t, err)
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(body)
	}
	for _, path := range []string{apigroup.ReportsPath, apigroup.HistoriesPath, "/apis/" + apigroup.Group + "/" + apigroup.Version, "/apis"} {
		for name, certs := range map[string][]tls.Certificate{"no client certificate": nil, "another CA's": {forged}} {
			code, body := get(t, path, certs...)
			assert.Equal(t, http.StatusUnauthorized, code, "%s, %s: %s", path, name, body)
			var st metav1.Status
			require.NoError(t, json.Unmarshal([]byte(body), &st), body)
			assert.Equal(t, metav1.StatusReasonUnauthorized, st.Reason)
			assert.NotContains(t, body, "ns1", "nothing of the fixture leaks")
		}
	}
	code, body := get(t, apigroup.ReportsPath, proxy)
	assert.Equal(t, http.StatusOK, code, body)
	assert.Contains(t, body, "ns1/policy-ns1", "the front proxy's certificate makes the headers count")
}

func policies(doc *document.Document) (report, violations []string) {
	seen := map[string]bool{}
	for _, s := range doc.Standards {
		for _, f := range s.Families {
			for _, c := range f.Controls {
				for _, p := range c.Policies {
					if !seen[p] {
						seen[p] = true
						report = append(report, p)
					}
				}
				for _, cell := range c.Clusters {
					for _, v := range cell.Violations {
						violations = append(violations, v.Message)
					}
				}
			}
		}
	}
	sort.Strings(report)
	return report, violations
}

// changed lists the policies of the changes, sorted, once each (nil: none).
func changed(list []history.Transition) []string {
	seen := map[string]bool{}
	var out []string
	for _, c := range list {
		if !seen[c.Policy] {
			seen[c.Policy] = true
			out = append(out, c.Policy)
		}
	}
	sort.Strings(out)
	return out
}

// Verifying reads the whole history: an admin (who may list policies in all
// namespaces) gets the chain checked through the hub, and finds the head a
// report carried; alice, who may list one namespace, is refused (403); a
// head that is not one is a 400.
func TestVerifyThroughHub(t *testing.T) {
	ctx := context.Background()
	admin, err := apigroup.NewClient(hubConfig)
	require.NoError(t, err)
	doc, err := admin.Report(ctx, url.Values{"since": {"30d"}})
	require.NoError(t, err)
	require.NotNil(t, doc.Report.HistoryHead, "a report with history carries its chain head")
	v, err := admin.Verify(ctx, doc.Report.HistoryHead.Hash)
	require.NoError(t, err)
	assert.True(t, v.OK(), "%+v", v.Broken)
	assert.Positive(t, v.Events)
	assert.Contains(t, v.Found, doc.Report.HistoryHead.Hash)

	alice, err := apigroup.NewClient(userConfig(t, "alice"))
	require.NoError(t, err)
	mine, err := alice.Report(ctx, url.Values{"since": {"30d"}})
	require.NoError(t, err)
	assert.Nil(t, mine.Report.HistoryHead, "the head counts the whole fleet's transitions: a reader of one namespace does not get it")
	_, err = alice.Verify(ctx, "")
	assert.True(t, apierrors.IsForbidden(err), "alice may list policies in ns1 only: %v", err)
	_, err = admin.Verify(ctx, "not-a-head")
	assert.True(t, apierrors.IsBadRequest(err), "%v", err)
}
