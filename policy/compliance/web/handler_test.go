package web_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"

	"flotilla.dev/flotilla/policy/compliance/web"
)

func get(t *testing.T, srv interface{ Client() *http.Client }, u, token string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	require.NoError(t, err)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := srv.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// policiesIn lists the root policies a JSON document reports, and the
// history's policies.
func policiesIn(t *testing.T, body string) (report, history []string) {
	t.Helper()
	var doc struct {
		Standards []struct {
			Families []struct {
				Controls []struct{ Policies []string }
			}
		}
		History *struct{ Changes []struct{ Policy string } }
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc), body)
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
			}
		}
	}
	sort.Strings(report)
	if doc.History != nil {
		hs := map[string]bool{}
		for _, c := range doc.History.Changes {
			if !hs[c.Policy] {
				hs[c.Policy] = true
				history = append(history, c.Policy)
			}
		}
		sort.Strings(history)
	}
	return report, history
}

func TestRefusesWithoutValidToken(t *testing.T) {
	srv := server(t, nil)
	for _, tc := range []struct{ path, token string }{
		{web.APIPath, ""}, {web.APIPath, "not-a-token"}, {web.PagePath, ""}, {web.PagePath, "not-a-token"},
	} {
		resp, body := get(t, srv, srv.URL+tc.path, tc.token)
		assert.Equal(t, http.StatusUnauthorized, resp.StatusCode, "%s with token %q", tc.path, tc.token)
		assert.Contains(t, resp.Header.Get("WWW-Authenticate"), "Bearer")
		assert.NotContains(t, body, "policy-baseline", "a refused request must not leak policies")
	}
	// The page offers the login form; the API says what to send.
	_, body := get(t, srv, srv.URL+web.PagePath, "")
	assert.Contains(t, body, `<form method="post" action="/compliance/login">`)
	_, body = get(t, srv, srv.URL+web.APIPath, "")
	assert.Contains(t, body, "Authorization: Bearer")
}

// alice may list policies in team-a only: she sees team-a's policies and their
// history, none of team-b's; a user with no rights sees nothing; the auditor
// sees both namespaces.
func TestUserSeesOnlyReadableNamespaces(t *testing.T) {
	srv := server(t, historyStore(t))
	tests := []struct {
		user          string
		report, hist  []string
		notInHTMLPage []string
	}{
		{"alice", []string{"team-a/policy-baseline", "team-a/policy-roles"}, []string{"team-a/policy-baseline"}, []string{"team-b", "SC-28", "encrypted"}},
		{"nobody", nil, nil, []string{"team-a", "team-b", "SC-28", "CM-2"}},
		{"auditor", []string{"team-a/policy-baseline", "team-a/policy-roles", "team-b/policy-encryption"}, []string{"team-a/policy-baseline", "team-b/policy-encryption"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.user, func(t *testing.T) {
			tok := token(t, tc.user)
			resp, body := get(t, srv, srv.URL+web.APIPath, tok)
			require.Equal(t, http.StatusOK, resp.StatusCode, body)
			report, hist := policiesIn(t, body)
			assert.Equal(t, tc.report, report)
			assert.Equal(t, tc.hist, hist)
			resp, page := get(t, srv, srv.URL+web.PagePath, tok)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
			for _, s := range tc.notInHTMLPage {
				assert.NotContains(t, page, s)
			}
		})
	}
}

func TestQueryParameters(t *testing.T) {
	srv := server(t, historyStore(t))
	tok := token(t, "auditor")
	resp, body := get(t, srv, srv.URL+web.APIPath+"?control=SC-28&since="+url.QueryEscape("3d"), tok)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	report, hist := policiesIn(t, body)
	assert.Equal(t, []string{"team-b/policy-encryption"}, report)
	assert.Empty(t, hist, "the history is the report's policies': SC-28 broke 5 days ago, outside a 3-day window")
	resp, body = get(t, srv, srv.URL+web.APIPath+"?control=CM&since="+url.QueryEscape("3d"), tok)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	report, hist = policiesIn(t, body)
	assert.Equal(t, []string{"team-a/policy-baseline"}, report)
	assert.Equal(t, []string{"team-a/policy-baseline"}, hist, "only west's break 2 days ago is in a 3-day window")
	resp, body = get(t, srv, srv.URL+web.APIPath+"?baseline=low", tok)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	assert.Contains(t, body, `"baseline": "NIST SP 800-53 rev5 LOW"`)
	resp, body = get(t, srv, srv.URL+web.APIPath+"?since=yesterday-ish", tok)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.True(t, strings.Contains(body, "yesterday-ish"), body)
}

// TestQueryParametersRefused: over HTTP, on both paths, a wrong parameter is
// a 400 naming it, before any policy is read; the server keeps serving.
func TestQueryParametersRefused(t *testing.T) {
	srv := server(t, historyStore(t))
	tok := token(t, "auditor")
	for query, want := range map[string]string{
		"cluster=east":                                 `query parameter "cluster" is not known`,
		"since=99999999d":                              `query parameter since "99999999d": more than 106751d back`,
		"since=0001-01-01&since=3d":                    "query parameter since is given 2 times",
		"since=2999-01-01":                             "is after now",
		"clusters=east,../west":                        `query parameter clusters: item 2 "../west" is not a cluster name`,
		"control=" + strings.Repeat("A", 4096):         "query parameter control: 4096 bytes, longer than 128",
		"standard=%3Cscript%3Ealert(1)%3C%2Fscript%3E": "", // a text that matches nothing: 200
		"control=%zz":                                  "query: invalid URL escape",
	} {
		for _, path := range []string{web.APIPath, web.PagePath} {
			resp, body := get(t, srv, srv.URL+path+"?"+query, tok)
			if want == "" {
				assert.Equal(t, http.StatusOK, resp.StatusCode, "%s?%s: %s", path, query, body)
				assert.NotContains(t, body, "<script>", "the page escapes what it echoes")
				continue
			}
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s?%s", path, query)
			assert.Contains(t, body, want, "%s?%s", path, query)
			assert.Equal(t, "text/plain; charset=utf-8", resp.Header.Get("Content-Type"), "an error is never HTML")
		}
	}
	// The oldest date a time holds is a clear refusal, not a crash nor a
	// read of the whole history for anyone who asks; 400 days is served.
	resp, body := get(t, srv, srv.URL+web.APIPath+"?since=0001-01-01", tok)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, body)
	assert.Contains(t, body, "more than 400 days back")
	resp, body = get(t, srv, srv.URL+web.APIPath+"?since=400d", tok)
	assert.Equal(t, http.StatusOK, resp.StatusCode, body)
}

func TestLoginSetsCookie(t *testing.T) {
	srv := server(t, nil)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(srv.URL+web.LoginPath, url.Values{"token": {"wrong"}})
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.Empty(t, resp.Cookies())
	resp, err = c.PostForm(srv.URL+web.LoginPath, url.Values{"token": {token(t, "alice")}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	ck := resp.Cookies()[0]
	assert.True(t, ck.HttpOnly && ck.Secure && ck.SameSite == http.SameSiteStrictMode, "cookie %+v", ck)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+web.APIPath, nil)
	req.AddCookie(ck)
	resp, err = c.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	report, _ := policiesIn(t, string(body))
	assert.Equal(t, []string{"team-a/policy-baseline", "team-a/policy-roles"}, report)
}

// TestTokenCacheIsBounded: every token an unauthenticated client sends is
// reviewed and its answer cached for a while; the cache stays within its
// bound however many different tokens arrive, and real tokens still work.
func TestTokenCacheIsBounded(t *testing.T) {
	defer web.SetMaxCached(20)()
	ctx := context.Background()
	a := web.NewAuthorizer(cs)
	for i := 0; i < 100; i++ {
		u, err := a.Authenticate(ctx, fmt.Sprintf("forged-token-%d", i))
		require.NoError(t, err)
		require.Nil(t, u, "a forged token authenticates no one")
		require.LessOrEqual(t, web.CachedTokens(a), 20)
	}
	u, err := a.Authenticate(ctx, token(t, "alice"))
	require.NoError(t, err)
	require.NotNil(t, u)
	assert.Equal(t, "system:serviceaccount:users:alice", u.Name)
}

// TestCrossSiteSignInRefused: a page elsewhere cannot sign a browser in (as
// the attacker, login CSRF) or out: a cross-site POST gets 403 and no
// cookie, by Origin or by Sec-Fetch-Site. The page's own form, and a client
// that is not a browser, still sign in; signing out clears the cookie.
func TestCrossSiteSignInRefused(t *testing.T) {
	srv := server(t, nil)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	post := func(path string, header map[string]string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(url.Values{"token": {token(t, "alice")}}.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for k, v := range header {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		return resp
	}
	for name, h := range map[string]map[string]string{
		"another origin":          {"Origin": "https://evil.example"},
		"cross-site fetch":        {"Sec-Fetch-Site": "cross-site"},
		"same-site, other origin": {"Sec-Fetch-Site": "same-site", "Origin": "https://other.hub.example"},
	} {
		for _, path := range []string{web.LoginPath, web.LogoutPath} {
			resp := post(path, h)
			assert.Equal(t, http.StatusForbidden, resp.StatusCode, "%s %s", name, path)
			assert.Empty(t, resp.Cookies(), "%s %s: no cookie set or cleared", name, path)
		}
	}
	for name, h := range map[string]map[string]string{
		"the page's own form": {"Sec-Fetch-Site": "same-origin", "Origin": srv.URL},
		"not a browser":       nil,
	} {
		resp := post(web.LoginPath, h)
		require.Equal(t, http.StatusSeeOther, resp.StatusCode, name)
		require.Len(t, resp.Cookies(), 1, name)
	}
	resp := post(web.LogoutPath, map[string]string{"Sec-Fetch-Site": "same-origin"})
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	require.Len(t, resp.Cookies(), 1)
	assert.True(t, resp.Cookies()[0].MaxAge < 0 && resp.Cookies()[0].Value == "", "sign-out clears the cookie: %+v", resp.Cookies()[0])
}

// TestPageShowsViewer: the page says who it is shown to; a browser signed
// in with the form gets a sign-out button, a client sending its own header
// none.
func TestPageShowsViewer(t *testing.T) {
	srv := server(t, nil)
	c := srv.Client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.PostForm(srv.URL+web.LoginPath, url.Values{"token": {token(t, "alice")}})
	require.NoError(t, err)
	resp.Body.Close()
	require.Len(t, resp.Cookies(), 1)
	req, _ := http.NewRequest(http.MethodGet, srv.URL+web.PagePath, nil)
	req.AddCookie(resp.Cookies()[0])
	resp, err = c.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "Signed in as <b>system:serviceaccount:users:alice</b>")
	assert.Contains(t, string(body), `<form method="post" action="/compliance/logout"`)
	_, page := get(t, srv, srv.URL+web.PagePath, token(t, "alice"))
	assert.Contains(t, page, "Signed in as <b>system:serviceaccount:users:alice</b>")
	assert.NotContains(t, page, "/compliance/logout", "a bearer header is the client's own: nothing to sign out of")
}

// TestAccessKeyDistinguishesIdentities: an access review's cached answer is
// never shared by two different identities: groups that join to the same
// string, or the same user with another extra (a scoped token).
func TestAccessKeyDistinguishesIdentities(t *testing.T) {
	a := &web.User{Name: "u", Groups: []string{"a,b"}}
	b := &web.User{Name: "u", Groups: []string{"a", "b"}}
	assert.NotEqual(t, web.AccessKey(a, "ns"), web.AccessKey(b, "ns"))
	scoped := &web.User{Name: "u", Groups: []string{"a"}, Extra: map[string]authenticationv1.ExtraValue{"scopes": {"user:info"}}}
	plain := &web.User{Name: "u", Groups: []string{"a"}}
	assert.NotEqual(t, web.AccessKey(scoped, "ns"), web.AccessKey(plain, "ns"))
	assert.NotEqual(t, web.AccessKey(plain, "ns"), web.AccessKey(plain, ""))
	same := &web.User{Name: "u", Groups: []string{"b", "a"}}
	assert.Equal(t, web.AccessKey(b, "ns"), web.AccessKey(same, "ns"), "the order of groups does not matter")
}
