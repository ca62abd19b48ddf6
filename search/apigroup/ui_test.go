package apigroup_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"

	"flotilla.dev/flotilla/internal/browsertest"
	"flotilla.dev/flotilla/search/apigroup"
)

// proxy is what `kubectl proxy` is: a local HTTP server that forwards to
// the hub apiserver with the user's credentials.
func proxy(t *testing.T, cfg *rest.Config) string {
	t.Helper()
	rt, err := rest.TransportFor(cfg)
	require.NoError(t, err)
	target, err := url.Parse(cfg.Host)
	require.NoError(t, err)
	p := httputil.NewSingleHostReverseProxy(target)
	p.Transport = rt
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

// The search page through the hub apiserver (as kubectl proxy reaches it),
// in headless Chromium: the results a user may see, a filter submitted
// with the form, a bad query's message, no browser complaint (the page runs
// no script under a strict Content-Security-Policy).
func TestSearchPageInBrowser(t *testing.T) {
	synced(t)
	carol := proxy(t, userConfig(t, "carol"))
	alice := proxy(t, userConfig(t, "alice"))
	b := browsertest.New(t)
	var carolRows, aliceRows, filtered int
	var firstCluster, summary, bad string
	var shot []byte
	require.NoError(t, chromedp.Run(b.Ctx,
		log.Enable(), runtime.Enable(),
		chromedp.EmulateViewport(1200, 800),
		chromedp.Navigate(carol+apigroup.UIPath+"?resource=pods"),
		chromedp.WaitVisible(`#results`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#results tbody tr").length`, &carolRows),
		chromedp.Text(`#results tbody tr td.cluster`, &firstCluster, chromedp.ByQuery),
		chromedp.SetValue(`input[name=image]`, "nginx:1.24", chromedp.ByQuery),
		chromedp.Submit(`form`, chromedp.ByQuery),
		chromedp.WaitVisible(`#summary`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#results tbody tr").length`, &filtered),
		chromedp.Text(`#summary`, &summary, chromedp.ByID),
		chromedp.FullScreenshot(&shot, 100),
		chromedp.Navigate(alice+apigroup.UIPath+"?resource=pods"),
		chromedp.WaitVisible(`#results`, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#results tbody tr").length`, &aliceRows),
		chromedp.Navigate(carol+apigroup.UIPath+"?resource=pods&labelSelector=n%3E1"),
		chromedp.WaitVisible(`.error`, chromedp.ByQuery),
		chromedp.Text(`.error`, &bad, chromedp.ByQuery),
	))
	browsertest.Screenshot(t, "search-page.png", shot)
	assert.Equal(t, 3, carolRows, "east's two Pods and west's one")
	assert.Equal(t, "east", firstCluster)
	assert.Equal(t, 1, filtered, "west's nginx:1.24 Pod")
	assert.Contains(t, summary, "1 pods found")
	assert.Equal(t, 2, aliceRows, "alice sees east only")
	assert.Contains(t, bad, "operator gt is not supported")
	assert.Empty(t, b.Problems(), "browser console: %s", strings.Join(b.Problems(), "\n"))

	// Everything the page shows came through html/template: a value with
	// markup is text.
	resp, err := http.Get(carol + apigroup.UIPath + "?resource=pods&namePrefix=%3Cscript%3Ealert(1)%3C/script%3E")
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Security-Policy"), "default-src 'none'")
}

// The page offers the resources of the clusters the user may see: bob,
// who may see none, is offered none.
func TestUIOffersOnlyVisibleResources(t *testing.T) {
	synced(t)
	for user, want := range map[string]bool{"carol": true, "bob": false} {
		resp, err := http.Get(proxy(t, userConfig(t, user)) + apigroup.UIPath)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, want, strings.Contains(string(body), "deployments.apps"), "%s: %s", user, body)
	}
}
