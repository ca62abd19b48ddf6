package web_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"flotilla.dev/flotilla/internal/browsertest"
	"flotilla.dev/flotilla/policy/compliance/web"
)

func chromium(t *testing.T) string { return browsertest.Chromium(t) }

func artifactDir(t *testing.T) string { return browsertest.ArtifactDir(t) }

// TestPageInBrowser opens the live page as the auditor in headless Chromium,
// wide and narrow: the rows and counts the fixture implies are on the page,
// the browser reports no console error or exception (the page runs no script
// and loads nothing, under a strict Content-Security-Policy), the narrow page
// does not scroll sideways, and a screenshot of each is kept.
func TestPageInBrowser(t *testing.T) {
	exe := chromium(t)
	srv := server(t, historyStore(t))
	tok := token(t, "auditor")

	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(exe), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-gpu", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	defer cancelTimeout()

	var mu sync.Mutex
	var problems []string
	chromedp.ListenTarget(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				problems = append(problems, fmt.Sprintf("console %s: %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError || e.Entry.Level == log.LevelWarning {
				problems = append(problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	})

	var totals, historyTotals string
	var familyRows, controlSummaries, changeRows, remediationRows, trendLines, heatCells int
	var wide, narrow []byte
	var overflow bool
	require.NoError(t, chromedp.Run(ctx,
		log.Enable(), runtime.Enable(), network.Enable(),
		network.SetExtraHTTPHeaders(network.Headers{"Authorization": "Bearer " + tok}),
		chromedp.EmulateViewport(1200, 900),
		chromedp.Navigate(srv.URL+web.PagePath),
		chromedp.WaitVisible(`#history`, chromedp.ByID),
		chromedp.Text(`p.totals`, &totals, chromedp.ByQuery),
		chromedp.Text(`#history-totals`, &historyTotals, chromedp.ByID),
		chromedp.Evaluate(`document.querySelectorAll("#families + .scroll tbody tr").length`, &familyRows),
		chromedp.Evaluate(`document.querySelectorAll("#controls ~ details details").length`, &controlSummaries),
		chromedp.Evaluate(`document.querySelectorAll("#changes tbody tr").length`, &changeRows),
		chromedp.Evaluate(`document.querySelectorAll("#remediations tbody tr").length`, &remediationRows),
		chromedp.Evaluate(`document.querySelectorAll("#trend polyline").length`, &trendLines),
		chromedp.Evaluate(`document.querySelectorAll("#heatmap + .legend + .scroll rect:not(.bg)").length`, &heatCells),
		chromedp.FullScreenshot(&wide, 100),
		chromedp.EmulateViewport(375, 800),
		chromedp.Navigate(srv.URL+web.PagePath),
		chromedp.WaitVisible(`#history`, chromedp.ByID),
		chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &overflow),
		chromedp.FullScreenshot(&narrow, 100),
	))
	dir := artifactDir(t)
	for name, img := range map[string][]byte{"compliance-page.png": wide, "compliance-page-narrow.png": narrow} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, img, 0o644))
		t.Logf("screenshot: %s", path)
	}

	// 3 policies, 3 controls: CM-2 (east Compliant, west NonCompliant), AC-6
	// (both Compliant), SC-28 (east NonCompliant): 3 compliant, 2 noncompliant.
	assert.Contains(t, totals, "3 compliant")
	assert.Contains(t, totals, "2 noncompliant")
	assert.Contains(t, totals, "0 pending")
	assert.Equal(t, 3, familyRows, "one row per family (AC, CM, SC)")
	assert.Equal(t, 5, heatCells, "one coloured heat-map cell per placed control and cluster")
	// In 30 days: west CM-2 -> NonCompliant (20d), -> Compliant (10d), ->
	// NonCompliant (2d); east SC-28 -> NonCompliant (5d). One remediation (10 days).
	assert.Equal(t, 4, changeRows)
	assert.Equal(t, 1, remediationRows)
	assert.Contains(t, historyTotals, "4 changes")
	assert.Contains(t, historyTotals, "1 remediated")
	assert.Contains(t, historyTotals, "mean time to remediate 10d 0h")
	assert.Equal(t, 3, trendLines, "compliant, noncompliant and pending lines")
	assert.False(t, overflow, "the narrow page scrolls sideways")
	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, problems, "browser console: %s", strings.Join(problems, "\n"))
}
