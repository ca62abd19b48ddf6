// Package browsertest runs pages in headless Chromium for tests (chromedp):
// it finds the browser, starts a context that records what the browser
// reports (console errors and warnings, exceptions, log errors such as a
// Content-Security-Policy refusal) and keeps screenshots. A missing browser
// fails the test, saying what to install.
package browsertest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Chromium finds the browser: $FLOTILLA_CHROMIUM, else chromium (Debian's
// package), chromium-browser or google-chrome on $PATH.
func Chromium(t testing.TB) string {
	t.Helper()
	if p := os.Getenv("FLOTILLA_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("headless browser not found (chromium, chromium-browser or google-chrome on $PATH): apt-get install chromium (or set FLOTILLA_CHROMIUM)")
	return ""
}

// ArtifactDir is where screenshots go: $FLOTILLA_TEST_ARTIFACTS, else a
// folder under the system temp dir that outlives the test.
func ArtifactDir(t testing.TB) string {
	dir := os.Getenv("FLOTILLA_TEST_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "flotilla-test-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Browser is a headless browser tab.
type Browser struct {
	// Ctx runs chromedp actions in the tab (2 minutes at most).
	Ctx context.Context
	mu  sync.Mutex
	// problems are what the browser reported as errors or warnings.
	problems []string
}

// New starts headless Chromium with one tab, stopped when t ends. Run
// log.Enable() and runtime.Enable() first in the tab to hear its reports.
func New(t testing.TB) *Browser {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(Chromium(t)), chromedp.NoSandbox,
		chromedp.Flag("ignore-certificate-errors", true), chromedp.Flag("disable-gpu", true))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(func() { cancelTimeout(); cancel(); cancelAlloc() })
	b := &Browser{Ctx: ctx}
	chromedp.ListenTarget(ctx, func(ev any) {
		b.mu.Lock()
		defer b.mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.APITypeError || e.Type == runtime.APITypeWarning {
				b.problems = append(b.problems, fmt.Sprintf("console %s: %v", e.Type, e.Args))
			}
		case *runtime.EventExceptionThrown:
			b.problems = append(b.problems, "exception: "+e.ExceptionDetails.Error())
		case *log.EventEntryAdded:
			if e.Entry.Level == log.LevelError || e.Entry.Level == log.LevelWarning {
				b.problems = append(b.problems, fmt.Sprintf("log %s: %s %s", e.Entry.Level, e.Entry.Text, e.Entry.URL))
			}
		}
	})
	return b
}

// Problems are the errors and warnings the browser reported so far.
func (b *Browser) Problems() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.problems...)
}

// Screenshot keeps img as name in ArtifactDir and logs where.
func Screenshot(t testing.TB, name string, img []byte) {
	path := filepath.Join(ArtifactDir(t), name)
	if err := os.WriteFile(path, img, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
