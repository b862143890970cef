package publish_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
)

func newClock() *testenv.Clock { return testenv.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) }

func TestLineProgress(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	p := publish.LineProgress(&buf, c.Now)
	tr := p.Start("img/26.1.1/treasury-node-26.1.1-amd64.tar", 4<<20)
	tr.Add(1 << 20)
	c.Advance(11 * time.Second)
	tr.Add(1 << 20) // a line for a long upload
	c.Advance(time.Second)
	tr.Add(2 << 20)
	tr.Done(nil)
	p.Start("bin/x.tar.gz", -1).Done(errors.New("boom"))
	p.Logf("latest is now %s", "26.1.1")
	want := "upload img/26.1.1/treasury-node-26.1.1-amd64.tar: 2.0 MiB / 4.0 MiB   50%  186.2 KiB/s\n" +
		"uploaded img/26.1.1/treasury-node-26.1.1-amd64.tar: 4.0 MiB in 12s (341.3 KiB/s)\n" +
		"upload bin/x.tar.gz: failed after 0 B: boom\n" +
		"latest is now 26.1.1\n"
	if got := buf.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestTerminalProgress(t *testing.T) {
	var buf bytes.Buffer
	c := newClock()
	p := publish.TerminalProgress(&buf, c.Now)
	a := p.Start("bin/a.tar.gz", 100)
	b := p.Start("bin/b.tar.gz", -1)
	c.Advance(time.Second)
	a.Add(50)
	b.Add(10)
	a.Done(nil)
	b.Done(nil)
	out := buf.String()
	for _, want := range []string{
		"  bin/a.tar.gz  50 B / 100 B   50%  50 B/s\n", // redrawn in place
		"\x1b[2A\x1b[J", // the block of two lines erased before a redraw
		"✓ bin/a.tar.gz  50 B in 1s (50 B/s)\n",
		"✓ bin/b.tar.gz  10 B in 1s (10 B/s)\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%q", want, out)
		}
	}
	if !strings.HasSuffix(out, "✓ bin/b.tar.gz  10 B in 1s (10 B/s)\n") {
		t.Errorf("the active block was not cleared at the end:\n%q", out)
	}
}
