package site_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"

	"github.com/wharfhq/wharf/internal/browsertest"
	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/site/auth"
)

// Phone page heights at 390 x 844 (docs/page.md): the page of one release
// and of three (a release, the next, a preview of the one after) may be at
// most these tall. Every binary listed for three desktop systems made them
// 3,060 and 4,999 px; 1,494 and 2,385 before each release showed its
// source commit and builder.
const (
	phoneMaxHeightOne   = 1600
	phoneMaxHeightThree = 2500
)

// TestPageChromiumPhone: on a phone (Chrome on Android, Safari on iPhone,
// 390 x 844) the page leads with what can be done there, the install line
// to copy and the release notes, before the release's table, which is
// folded; and it stays within phoneMaxHeight*.
func TestPageChromiumPhone(t *testing.T) {
	chromium := testenv.Chromium(t)
	ctx := context.Background()
	notes, err := publish.RenderNotes([]byte("## What changed\n\n- **engine** starts 2× faster on a cold cache.\n- `treasury token create --ttl` takes a duration.\n\nUpgrade notes: none.\n"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := auth.Open(ctx, filepath.Join(t.TempDir(), "wharf.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	// Each release with its build as GitHub Actions states it (the
	// builder's ID is a long workflow ref) and attestations listed.
	rel := func(v string) publish.Release {
		return publish.Release{Version: v, NotesHTML: notes, Provenance: &publish.ReleaseProvenance{
			BuilderID:  "https://github.com/wharfhq/treasury/.github/workflows/release.yml@refs/tags/v" + v,
			Repository: "https://github.com/wharfhq/treasury", Commit: strings.Repeat("5eed1e55", 5), Ref: "refs/tags/v" + v,
		}}
	}
	one := pageServe(t, newPageTreeOf(t, publish.DefaultArtifacts(), []publish.Release{rel("26.1.1")}), db)
	three := pageServe(t, newPageTreeOf(t, publish.DefaultArtifacts(), []publish.Release{rel("26.1.1"), rel("26.1.2"), rel("26.1.3-pre.1")}), db)
	bctx := browsertest.Open(t, chromium.DevToolsURL, 2*time.Minute, t.TempDir())
	shots := t.TempDir()

	const (
		android = "Mozilla/5.0 (Linux; Android 15; Pixel 9) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/156.0.0.0 Mobile Safari/537.36"
		iphone  = "Mozilla/5.0 (iPhone; CPU iPhone OS 18_0 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/18.0 Mobile/15E148 Safari/604.1"
	)
	tests := []struct {
		name  string
		ua    string
		hints *emulation.UserAgentMetadata
		url   string
		max   int
	}{
		{"AndroidOneRelease", android, &emulation.UserAgentMetadata{Platform: "Android", Mobile: true,
			Brands: []*emulation.UserAgentBrandVersion{{Brand: "Chromium", Version: "156"}}}, one, phoneMaxHeightOne},
		{"AndroidThreeReleases", android, &emulation.UserAgentMetadata{Platform: "Android", Mobile: true,
			Brands: []*emulation.UserAgentBrandVersion{{Brand: "Chromium", Version: "156"}}}, three, phoneMaxHeightThree},
		{"IPhoneOneRelease", iphone, nil, one, phoneMaxHeightOne},
		{"IPhoneThreeReleases", iphone, nil, three, phoneMaxHeightThree},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := chromedp.Call(bctx, emulation.SetUserAgentOverride, emulation.SetUserAgentOverrideParams{UserAgent: tt.ua, UserAgentMetadata: tt.hints}); err != nil {
				t.Fatal(err)
			}
			browsertest.Do(t, bctx, "open the page", chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile), chromedp.Navigate(tt.url+"/"), chromedp.WaitVisible(chromedp.CSS(".release")))
			height, err := chromedp.Run(bctx, chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: the page is %d px tall at 390 x 844", tt.name, height)
			if height > tt.max {
				t.Errorf("the page is %d px tall at 390 x 844, want at most %d", height, tt.max)
			}
			// In the first release: the install block, then the notes,
			// then the table, folded.
			order, err := chromedp.Run(bctx, chromedp.Evaluate[string](`(() => {
				const s = document.querySelector(".release");
				const at = q => { const e = s.querySelector(q); return e ? e.getBoundingClientRect().top : -1; };
				const i = at(".install pre"), n = at(".notes"), tb = at("table.downloads");
				const fold = s.querySelector("table.downloads").closest("details");
				const table = fold ? (fold.open ? "open" : "folded") : "unfolded";
				return (i >= 0 && n > i ? "install,notes" : "notes first") + " table " + table + (tb === 0 || tb > n ? "" : " above notes");
			})()`))
			if err != nil {
				t.Fatal(err)
			}
			if want := "install,notes table folded"; order != want {
				t.Errorf("first release on a phone: %q, want %q", order, want)
			}
			pageScreenshot(t, bctx, shots, "phone-"+tt.name+"-390.png", 390)
		})
	}
	keepScreenshots(t, shots)
}
