package testenv

import (
	"os"
	"syscall"
	"testing"
	"time"
)

func TestProcessCPU(t *testing.T) {
	// The process's own CPU by /proc against getrusage's, after 150 ms of
	// it spent spinning: the two agree to a few clock ticks.
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	for start := rusage(); rusage()-start < 150*time.Millisecond; {
	}
	got, err := ProcessCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	want := rusage()
	if got < 150*time.Millisecond || got > want+50*time.Millisecond || got < want-50*time.Millisecond {
		t.Errorf("ProcessCPU = %s, getrusage %s (after 150 ms of CPU spinning)", got, want)
	}
	if _, err := ProcessCPU(-1); err == nil {
		t.Error("ProcessCPU(-1): no error")
	}
}
