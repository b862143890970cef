package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/wharfhq/wharf/publish/oci"
)

// CheckInput looks at dir as publish would and deeper, without publishing:
// file names against the config (as ScanInput), then the content of each
// file: a raw executable is an ELF for its Linux platform, a Mach-O for
// macOS or a #! script; a ready archive is gzip'd tar holding the
// executable at its top, itself of the right format; an image is a docker
// save archive whose manifest names a config of its platform and layers it
// holds. It returns the usable inputs and every problem found, one a line
// ("file: what is wrong"); err is for a directory that cannot be read.
func (c *Config) CheckInput(dir string) (inputs []Input, problems []string, err error) {
	inputs, ierr, err := c.scan(dir, false)
	if err != nil {
		return nil, nil, err
	}
	if ierr != nil {
		problems = append(problems, ierr.Bad...)
		for _, s := range ierr.Unknown {
			problems = append(problems, fmt.Sprintf("%s: matches no configured artifact (BINARY-OS-PLATFORM, BINARY-OS-PLATFORM.tar.gz or IMAGE-PLATFORM.tar; OS linux or macos, PLATFORM amd64 or arm64)", s))
		}
		for _, s := range ierr.Missing {
			problems = append(problems, "missing: "+s)
		}
	}
	for _, in := range inputs {
		if err := checkContent(in, c.maxImageSize()); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path.Base(in.Path), err))
		}
		if _, err := readFacts(in, ""); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", path.Base(in.Path), err))
		}
	}
	return inputs, problems, nil
}

// checkContent reads one input through and checks what it holds.
func checkContent(in Input, maxImageSize int64) error {
	f, err := in.open()
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, headLen)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return err
	}
	if err := refuseHead(head[:n]); err != nil {
		return err
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	switch in.Form {
	case FormExecutable:
		head := make([]byte, 4096)
		n, err := io.ReadFull(f, head)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
			return err
		}
		return checkExecutable(head[:n], in.Build)
	case FormArchive:
		return checkArchive(f, in.Spec.Executable, in.Build)
	case FormImage:
		return checkImage(f, in.Size, in.Build, maxImageSize)
	}
	return nil
}

// ELF machines and Mach-O CPU types of the platforms.
var (
	elfMachine   = map[string]uint16{"amd64": 62, "arm64": 183}                // EM_X86_64, EM_AARCH64
	machoCPU     = map[string]uint32{"amd64": 0x01000007, "arm64": 0x0100000c} // CPU_TYPE_X86_64, CPU_TYPE_ARM64
	platformName = map[string]string{"amd64": "x86-64", "arm64": "arm64"}
)

// checkExecutable checks the first bytes of an executable against the
// build it is published for.
func checkExecutable(head []byte, b Build) error {
	want := b.OS + "/" + b.Platform
	switch {
	case len(head) == 0:
		return errors.New("empty file")
	case bytes.HasPrefix(head, []byte("#!")):
		return nil // a script runs anywhere its interpreter does
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		if b.OS != "linux" {
			return fmt.Errorf("an ELF (Linux) executable, published for %s", want)
		}
		if len(head) < 20 {
			return errors.New("a truncated ELF header")
		}
		var order binary.ByteOrder = binary.LittleEndian
		if head[5] == 2 {
			order = binary.BigEndian
		}
		if m := order.Uint16(head[18:]); m != elfMachine[b.Platform] {
			return fmt.Errorf("an ELF for %s, published for %s", machineName(m), want)
		}
		return nil
	}
	cpus, ok := machoCPUs(head)
	if !ok {
		return fmt.Errorf("not an executable (no ELF, Mach-O or #! header), published for %s", want)
	}
	if b.OS != "macos" {
		return fmt.Errorf("a Mach-O (macOS) executable, published for %s", want)
	}
	if !slices.Contains(cpus, machoCPU[b.Platform]) {
		return fmt.Errorf("a Mach-O without %s code, published for %s", platformName[b.Platform], want)
	}
	return nil
}

func machineName(m uint16) string {
	for p, v := range elfMachine {
		if v == m {
			return platformName[p]
		}
	}
	return fmt.Sprintf("machine %d", m)
}

// machoCPUs returns the CPU types of a Mach-O file or a universal one.
func machoCPUs(head []byte) ([]uint32, bool) {
	if len(head) < 8 {
		return nil, false
	}
	switch binary.BigEndian.Uint32(head) {
	case 0xcffaedfe, 0xcefaedfe: // MH_MAGIC_64, MH_MAGIC little-endian
		return []uint32{binary.LittleEndian.Uint32(head[4:])}, true
	case 0xcafebabe: // FAT_MAGIC: big-endian fat_arch entries of 20 bytes
		n := int(binary.BigEndian.Uint32(head[4:]))
		var cpus []uint32
		for i := 0; i < n && 8+20*i+4 <= len(head); i++ {
			cpus = append(cpus, binary.BigEndian.Uint32(head[8+20*i:]))
		}
		return cpus, len(cpus) > 0
	}
	return nil, false
}

// checkArchive checks that a .tar.gz holds the executable at its top, as
// the install script takes it, and that it is one for the build.
func checkArchive(r io.Reader, exe string, b Build) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not gzip data: %w", err)
	}
	tr := tar.NewReader(zr)
	var top []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("not a tar archive inside the gzip: %w", err)
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		if !strings.Contains(name, "/") && name != "." {
			top = append(top, name)
		}
		if name != exe {
			continue
		}
		if h.Typeflag != tar.TypeReg {
			return fmt.Errorf("%s in the archive is not a regular file", exe)
		}
		head := make([]byte, 4096)
		n, err := io.ReadFull(tr, head)
		if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read %s in the archive: %w", exe, err)
		}
		if h.Mode&0o111 == 0 {
			return fmt.Errorf("%s in the archive is not executable (mode %o)", exe, h.Mode&0o777)
		}
		if err := checkExecutable(head[:n], b); err != nil {
			return fmt.Errorf("%s in the archive: %w", exe, err)
		}
		return nil
	}
	if len(top) > 5 {
		top = append(top[:5], "…")
	}
	return fmt.Errorf("holds no executable %s at its top (the install script takes it from there; the top holds %s); set executable = in wharf.toml if it has another name", exe, orNothing(strings.Join(top, ", ")))
}

func orNothing(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}

// checkImage reads an image archive as publish does (oci.Read): a docker
// save or an OCI layout holding an image of the build's platform whose
// blobs are all there with their digests.
func checkImage(f *os.File, size int64, b Build, maxSize int64) error {
	_, err := oci.Read(f, size, b.Platform, oci.Limits{MaxSize: maxSize})
	return err
}
