//go:build windows

package dir

import (
	"os"

	"golang.org/x/sys/windows"
)

// errNotDir is what opening a/b reports when a is a file.
var errNotDir error = windows.ERROR_PATH_NOT_FOUND

func lockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK, 0, 1, 0, &ol)
}

func unlockFile(f *os.File) error {
	var ol windows.Overlapped
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, &ol)
}
