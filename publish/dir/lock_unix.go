//go:build unix

package dir

import (
	"os"
	"syscall"
)

// errNotDir is what opening a/b reports when a is a file.
var errNotDir error = syscall.ENOTDIR

func lockFile(f *os.File) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

func unlockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
