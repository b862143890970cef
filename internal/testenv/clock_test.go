package testenv_test

import (
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestClockAfter: a wait ends when Advance reaches it, never by itself;
// NextAfter sees every wait asked, passing over the long ones.
func TestClockAfter(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := testenv.NewClock(start)
	long := c.After(time.Hour)
	short := c.After(time.Second)
	if got := c.NextAfter(t, time.Minute); got != time.Second {
		t.Fatalf("NextAfter = %s, want 1s (the hour passed over)", got)
	}
	c.Advance(999 * time.Millisecond)
	select {
	case <-short:
		t.Fatal("a 1 s wait ended after 999 ms")
	default:
	}
	c.Advance(time.Millisecond)
	select {
	case got := <-short:
		if want := start.Add(time.Second); !got.Equal(want) {
			t.Errorf("the wait ended at %s, want %s", got, want)
		}
	default:
		t.Fatal("a 1 s wait did not end at 1 s")
	}
	select {
	case <-long:
		t.Fatal("an hour's wait ended after a second")
	default:
	}
	waits := c.AutoAdvance(t, time.Minute)
	select {
	case <-c.After(30 * time.Second):
	case <-time.After(10 * time.Second):
		t.Fatal("AutoAdvance did not end a 30 s wait")
	}
	if got := waits(); len(got) != 1 || got[0] != 30*time.Second {
		t.Errorf("AutoAdvance ended %v, want [30s]", got)
	}
}
