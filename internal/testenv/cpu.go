package testenv

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// ProcessCPU is the CPU time, user and system, that process pid has used
// so far, from /proc/PID/stat: utime and stime, the 12th and 13th fields
// after the command's closing parenthesis, in clock ticks of 10 ms.
// Errors: the process is gone, or the file is not as Linux writes it.
func ProcessCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: %w", pid, err)
	}
	_, rest, ok := strings.Cut(string(stat), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0, fmt.Errorf("cpu of process %d: /proc/%d/stat: %q", pid, pid, stat)
	}
	u, err := strconv.ParseInt(f[11], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: utime: %w", pid, err)
	}
	s, err := strconv.ParseInt(f[12], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("cpu of process %d: stime: %w", pid, err)
	}
	return time.Duration(u+s) * 10 * time.Millisecond, nil
}
