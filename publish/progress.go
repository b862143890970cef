package publish

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress receives what a Publisher does. Implementations are safe for
// concurrent use: artifacts upload in parallel.
type Progress interface {
	// Logf reports an event, one line.
	Logf(format string, args ...any)
	// Start reports that an upload of key begins; size is -1 when unknown
	// (an executable being packed).
	Start(key string, size int64) Transfer
}

// Transfer is one upload in progress.
type Transfer interface {
	// Add reports n more bytes read and sent.
	Add(n int64)
	// Done reports the end of the upload, err nil when it succeeded.
	Done(err error)
}

// NoProgress discards everything.
func NoProgress() Progress { return noProgress{} }

type noProgress struct{}

func (noProgress) Logf(string, ...any)          {}
func (noProgress) Start(string, int64) Transfer { return noProgress{} }
func (noProgress) Add(int64)                    {}
func (noProgress) Done(error)                   {}

// LineProgress writes plain log lines to w, for CI logs: one per finished
// upload, with its size and rate, and one every interval for long uploads.
func LineProgress(w io.Writer, now func() time.Time) Progress {
	return &lineProgress{w: w, now: now, every: 10 * time.Second}
}

type lineProgress struct {
	mu    sync.Mutex
	w     io.Writer
	now   func() time.Time
	every time.Duration
}

func (p *lineProgress) Logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.w, format+"\n", args...)
}

func (p *lineProgress) Start(key string, size int64) Transfer {
	t := p.now()
	return &lineTransfer{p: p, key: key, size: size, start: t, last: t}
}

type lineTransfer struct {
	p           *lineProgress
	key         string
	size, n     int64
	start, last time.Time
}

func (t *lineTransfer) Add(n int64) {
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	t.n += n
	if now := t.p.now(); now.Sub(t.last) >= t.p.every {
		t.last = now
		fmt.Fprintf(t.p.w, "upload %s: %s\n", t.key, transferStatus(t.n, t.size, now.Sub(t.start)))
	}
}

func (t *lineTransfer) Done(err error) {
	t.p.mu.Lock()
	defer t.p.mu.Unlock()
	d := t.p.now().Sub(t.start)
	if err != nil {
		fmt.Fprintf(t.p.w, "upload %s: failed after %s: %v\n", t.key, fmtBytes(t.n), err)
		return
	}
	fmt.Fprintf(t.p.w, "uploaded %s: %s in %s (%s/s)\n", t.key, fmtBytes(t.n), d.Round(time.Millisecond), fmtBytes(rate(t.n, d)))
}

// TerminalProgress draws the running uploads at the bottom of a terminal,
// one line each with bytes, share and rate, redrawn at most every 100 ms;
// finished uploads and events scroll above them.
func TerminalProgress(w io.Writer, now func() time.Time) Progress {
	return &termProgress{w: w, now: now}
}

type termProgress struct {
	mu     sync.Mutex
	w      io.Writer
	now    func() time.Time
	active []*termTransfer
	drawn  int // lines of the active block on screen
	last   time.Time
}

type termTransfer struct {
	p       *termProgress
	key     string
	size, n int64
	start   time.Time
}

func (p *termProgress) Logf(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear()
	fmt.Fprintf(p.w, format+"\n", args...)
	p.draw()
}

func (p *termProgress) Start(key string, size int64) Transfer {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := &termTransfer{p: p, key: key, size: size, start: p.now()}
	p.active = append(p.active, t)
	p.clear()
	p.draw()
	return t
}

func (t *termTransfer) Add(n int64) {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	t.n += n
	if now := p.now(); now.Sub(p.last) >= 100*time.Millisecond {
		p.last = now
		p.clear()
		p.draw()
	}
}

func (t *termTransfer) Done(err error) {
	p := t.p
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, a := range p.active {
		if a == t {
			p.active = append(p.active[:i], p.active[i+1:]...)
			break
		}
	}
	p.clear()
	d := p.now().Sub(t.start)
	if err != nil {
		fmt.Fprintf(p.w, "✗ %s: %v\n", t.key, err)
	} else {
		fmt.Fprintf(p.w, "✓ %s  %s in %s (%s/s)\n", t.key, fmtBytes(t.n), d.Round(time.Millisecond), fmtBytes(rate(t.n, d)))
	}
	p.draw()
}

// clear erases the active block: cursor up over it, erase to the end.
func (p *termProgress) clear() {
	if p.drawn > 0 {
		fmt.Fprintf(p.w, "\x1b[%dA\x1b[J", p.drawn)
		p.drawn = 0
	}
}

func (p *termProgress) draw() {
	var b strings.Builder
	now := p.now()
	for _, t := range p.active {
		fmt.Fprintf(&b, "  %s  %s\n", t.key, transferStatus(t.n, t.size, now.Sub(t.start)))
	}
	io.WriteString(p.w, b.String())
	p.drawn = len(p.active)
}

func transferStatus(n, size int64, d time.Duration) string {
	s := fmtBytes(n)
	if size > 0 {
		s += fmt.Sprintf(" / %s  %3d%%", fmtBytes(size), n*100/size)
	}
	return s + fmt.Sprintf("  %s/s", fmtBytes(rate(n, d)))
}

func rate(n int64, d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64(float64(n) / d.Seconds())
}

// fmtBytes formats a byte count in binary units.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// countingReader reports the bytes read through it to a Transfer and
// hashes them. It is a HashingReader, so the store it is handed to takes
// its digest instead of hashing every byte a second time.
type countingReader struct {
	hr HashingReader
	t  Transfer
	n  int64
}

func newCountingReader(r io.Reader, t Transfer) *countingReader {
	return &countingReader{hr: Hashing(r), t: t}
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.hr.Read(p)
	if n > 0 {
		c.n += int64(n)
		c.t.Add(int64(n))
	}
	return n, err
}

// SHA256 is the digest of the bytes read so far.
func (c *countingReader) SHA256() []byte { return c.hr.SHA256() }
