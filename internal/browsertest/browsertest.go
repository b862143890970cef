// Package browsertest drives a test chromium (internal/testenv starts it)
// with chromedp: a tab with JavaScript off that saves downloads into a
// directory, and waiting for a download to finish.
package browsertest

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/remote"
)

// Open connects to the browser at devToolsURL and returns the context of
// a new tab, closed when the test ends, with JavaScript off (the page
// needs none) and downloads saved into downloads under their GUID. Every
// action in the tab fails after timeout.
func Open(tb testing.TB, devToolsURL string, timeout time.Duration, downloads string) context.Context {
	tb.Helper()
	allocCtx, cancelAlloc := remote.NewAllocator(context.Background(), devToolsURL)
	tab, cancelTab := chromedp.NewContext(allocCtx)
	ctx, cancelTimeout := context.WithTimeout(tab, timeout)
	tb.Cleanup(func() { cancelTimeout(); cancelTab(); cancelAlloc() })
	if _, err := chromedp.CallBrowser(ctx, browser.SetDownloadBehavior, browser.SetDownloadBehaviorParams{
		Behavior: browser.SetDownloadBehaviorBehaviorAllowAndName, DownloadPath: downloads, EventsEnabled: new(true),
	}); err != nil {
		tb.Fatalf("download behaviour: %v", err)
	}
	if _, err := chromedp.Call(ctx, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: true}); err != nil {
		tb.Fatalf("disable JavaScript: %v", err)
	}
	return ctx
}

// Do runs steps in the tab of ctx, failing the test with what on error.
func Do(tb testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	tb.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		tb.Fatalf("%s: %v", what, err)
	}
}

// Download runs trigger (a click, a form sent) and waits for the download
// it starts to finish. It returns the saved file, in the directory given
// to Open, and the file name the server suggested.
func Download(ctx context.Context, downloads string, trigger func() error) (path, name string, err error) {
	begins := chromedp.BrowserEvents(ctx, browser.DownloadWillBegin)
	progress := chromedp.BrowserEvents(ctx, browser.DownloadProgress)
	if err := trigger(); err != nil {
		return "", "", err
	}
	var guid string
	for ev, err := range begins {
		if err != nil {
			return "", "", fmt.Errorf("no download began: %w", err)
		}
		guid, name = ev.GUID, ev.SuggestedFilename
		break
	}
	if guid == "" {
		return "", "", errors.New("no download began")
	}
	for ev, err := range progress {
		if err != nil {
			return "", "", fmt.Errorf("download of %s did not finish: %w", name, err)
		}
		if ev.GUID != guid {
			continue
		}
		switch ev.State {
		case browser.DownloadProgressStateCanceled:
			return "", "", errors.New("download of " + name + " canceled")
		case browser.DownloadProgressStateCompleted:
			return filepath.Join(downloads, guid), name, nil
		}
	}
	return "", "", errors.New("download events ended")
}
