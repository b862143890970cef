package publish

import (
	"os"
	"syscall"
)

// kernelCopy is whether image archives and their blobs are handed to the
// store as FileSections: on Linux, where a file's change time and inode
// tell a rewritten archive from the one read (fileState), and the
// directory store copies them with copy_file_range.
const kernelCopy = true

// fileState adds what only the system keeps: the change time (which no
// call sets back), device and inode.
func fileState(st os.FileInfo, s *inputState) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		s.ctime = sys.Ctim.Nano()
		s.dev, s.ino = uint64(sys.Dev), sys.Ino
	}
}
