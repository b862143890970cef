package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
)

// SBOMSuffix ends the name of the SBOM a build job puts beside an input
// (treasury-node-amd64.tar.cdx.json), CycloneDX JSON.
const SBOMSuffix = ".cdx.json"

// MaxSBOM bounds an SBOM file and a Go executable read for its build info.
const (
	MaxSBOM       = 8 << 20
	maxExecutable = 1 << 30
)

// ErrBadSBOM is returned by Publish and CheckInput for an SBOM that
// cannot be published: a build job's that is not CycloneDX JSON or is
// about other bytes, or a Go executable whose build info is corrupt.
var ErrBadSBOM = errors.New("SBOM refused")

// inputFacts is what one read of an input file tells before anything
// is written: the file's SHA-256 (the claim's, and what a build job's
// SBOM must name) and the input's CycloneDX JSON SBOM.
type inputFacts struct {
	sha256 string // hex, of the file as it is
	// sbom is the build job's file beside the input when there is one
	// (which must be about the input's bytes), else one made from a Go
	// executable's build info, else nil (no SBOM is known: a script, an
	// image without one).
	sbom []byte
}

// readFacts reads the input file once, hashing it, and reads the Go
// build info on the way: for an executable, only the parts buildinfo
// needs (and, when it finds none, the bytes already streaming into the
// hash are searched for the build info's magic); for an archive, the
// executable is taken out of the same decompressing read that hashes the
// archive. An image whose digest is known already (its archive was read)
// is not read again: known is its SHA-256, hex, or "".
func readFacts(in Input, known string) (inputFacts, error) {
	var job []byte
	var stated string
	if in.SBOM != "" {
		var err error
		if job, stated, err = readJobSBOM(in); err != nil {
			return inputFacts{}, err
		}
	}
	if known != "" && in.Form == FormImage {
		return checkJobSBOM(in, inputFacts{sha256: known, sbom: job}, stated)
	}
	f, err := in.open()
	if err != nil {
		return inputFacts{}, err
	}
	defer f.Close()
	h := sha256.New()
	var (
		info  *buildinfo.BuildInfo
		ierr  error
		magic bool // the build info's magic is in the executable
	)
	switch {
	case job != nil || in.Form != FormExecutable && in.Form != FormArchive:
		_, err = io.Copy(h, f)
	case in.Form == FormExecutable:
		if info, ierr = buildinfo.Read(f); ierr == nil {
			if _, err = f.Seek(0, io.SeekStart); err == nil {
				_, err = io.Copy(h, f)
			}
			break
		}
		if _, err = f.Seek(0, io.SeekStart); err == nil {
			var m magicScanner
			_, err = io.Copy(io.MultiWriter(h, &m), f)
			magic = m.found
		}
	default:
		tee := io.TeeReader(f, h)
		var exe []byte
		exe, ierr, err = archiveExecutable(tee, in.Spec.Executable)
		if exe != nil {
			if info, ierr = buildinfo.Read(bytes.NewReader(exe)); ierr != nil {
				magic = bytes.Contains(exe, []byte(buildInfoMagic))
			}
		}
		if err == nil {
			_, err = io.Copy(io.Discard, tee)
		}
	}
	if err != nil {
		return inputFacts{}, fmt.Errorf("read %s: %w", in.Path, err)
	}
	facts := inputFacts{sha256: hex.EncodeToString(h.Sum(nil))}
	if job != nil {
		facts.sbom = job
		return checkJobSBOM(in, facts, stated)
	}
	if ierr != nil {
		if notGo(ierr) && !magic {
			return facts, nil
		}
		return inputFacts{}, fmt.Errorf("%w: the Go build info embedded in the executable cannot be read: %v", ErrBadSBOM, ierr)
	}
	if info == nil {
		return facts, nil
	}
	if facts.sbom, err = goSBOM(info, in.Spec.Name); err != nil {
		return inputFacts{}, err
	}
	return facts, nil
}

// checkJobSBOM refuses the facts of an input whose build job's SBOM
// (facts.sbom when in.SBOM is set) states another digest than the file's.
func checkJobSBOM(in Input, facts inputFacts, stated string) (inputFacts, error) {
	if in.SBOM != "" && facts.sha256 != stated {
		return inputFacts{}, fmt.Errorf("%w: %s is about bytes of sha256 %s, %s has %s", ErrBadSBOM, in.SBOM, stated, in.Path, facts.sha256)
	}
	return facts, nil
}

// buildInfoMagic starts the build info the Go linker embeds: a file that
// holds it is a Go executable, and one whose build info does not read is
// corrupt, not a file of another language.
const buildInfoMagic = "\xff Go buildinf:"

// notGo reports whether buildinfo's error says the file is no Go
// executable at all, rather than one whose build info is corrupt.
func notGo(err error) bool {
	s := err.Error()
	return strings.Contains(s, "not a Go executable") || strings.Contains(s, "unrecognized file format")
}

// magicScanner is an io.Writer that notes whether buildInfoMagic went
// through it, across the boundaries of writes.
type magicScanner struct {
	tail  []byte // the last len(buildInfoMagic)-1 bytes written
	found bool
}

func (m *magicScanner) Write(p []byte) (int, error) {
	if m.found {
		return len(p), nil
	}
	k := len(buildInfoMagic) - 1
	edge := append(m.tail, p[:min(len(p), k)]...)
	if bytes.Contains(edge, []byte(buildInfoMagic)) || bytes.Contains(p, []byte(buildInfoMagic)) {
		m.found = true
		return len(p), nil
	}
	if len(p) >= k {
		m.tail = append(m.tail[:0], p[len(p)-k:]...)
	} else {
		m.tail = append(m.tail[:0], edge[max(0, len(edge)-k):]...)
	}
	return len(p), nil
}

// archiveExecutable returns the bytes of the executable at the top of a
// gzip'd tar read from r: nil when r is no gzip'd tar holding it (the
// archive's own checks refuse it), bad when its bytes do not decompress
// whole, err for an error reading r.
func archiveExecutable(r io.Reader, exe string) (b []byte, bad, err error) {
	er := errReader{r: r, err: new(error)}
	zr, zerr := gzip.NewReader(er)
	if zerr != nil {
		return nil, nil, *er.err
	}
	tr := tar.NewReader(zr)
	for {
		h, terr := tr.Next()
		if terr != nil {
			return nil, nil, *er.err
		}
		if strings.TrimPrefix(h.Name, "./") == exe {
			b, rerr := io.ReadAll(io.LimitReader(tr, maxExecutable))
			if *er.err != nil {
				return nil, nil, *er.err
			}
			if rerr != nil {
				return nil, rerr, nil
			}
			return b, nil, nil
		}
	}
}

// errReader notes the first error of r other than io.EOF, so a failing
// read of the file is told apart from data that does not decode.
type errReader struct {
	r   io.Reader
	err *error
}

func (e errReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && err != io.EOF && *e.err == nil {
		*e.err = err
	}
	return n, err
}

// goSBOM is the CycloneDX SBOM of a Go executable: its main module as the
// component described (with the Go version and build settings as
// properties) and every module linked in, with its version and go.sum
// hash.
func goSBOM(info *buildinfo.BuildInfo, name string) ([]byte, error) {
	purl := func(m debug.Module) string { return "pkg:golang/" + m.Path + "@" + m.Version }
	props := []cdx.Property{{Name: "cdx:go:version", Value: info.GoVersion}, {Name: "cdx:go:package", Value: info.Path}}
	for _, s := range info.Settings {
		props = append(props, cdx.Property{Name: "cdx:go:build:" + s.Key, Value: s.Value})
	}
	main := &cdx.Component{Type: cdx.ComponentTypeApplication, Name: name, Properties: &props}
	if info.Main.Path != "" {
		main.Group = info.Main.Path
		main.Version = info.Main.Version
		main.BOMRef = purl(info.Main)
		main.PackageURL = purl(info.Main)
	}
	var comps []cdx.Component
	for _, d := range info.Deps {
		m := *d
		if d.Replace != nil {
			m = *d.Replace
		}
		c := cdx.Component{Type: cdx.ComponentTypeLibrary, Name: m.Path, Version: m.Version, BOMRef: purl(m), PackageURL: purl(m)}
		if m.Sum != "" {
			c.Properties = &[]cdx.Property{{Name: "cdx:go:module:sum", Value: m.Sum}}
		}
		if d.Replace != nil {
			c.Description = "replaces " + d.Path + "@" + d.Version
		}
		comps = append(comps, c)
	}
	bom := cdx.NewBOM()
	bom.Metadata = &cdx.Metadata{Component: main}
	bom.Components = &comps
	var b bytes.Buffer
	if err := cdx.NewBOMEncoder(&b, cdx.BOMFileFormatJSON).Encode(bom); err != nil {
		return nil, fmt.Errorf("SBOM: %w", err)
	}
	return b.Bytes(), nil
}

// readJobSBOM reads the build job's SBOM of in and checks it is
// CycloneDX JSON whose described component names a SHA-256, which it
// returns (hex) for the caller to compare with the input's.
func readJobSBOM(in Input) (bom []byte, stated string, err error) {
	r, err := in.openSibling(in.SBOM)
	if err != nil {
		return nil, "", err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxSBOM+1))
	if err != nil {
		return nil, "", fmt.Errorf("read %s: %w", in.SBOM, err)
	}
	if len(b) > MaxSBOM {
		return nil, "", fmt.Errorf("%w: %s is more than %d bytes", ErrBadSBOM, in.SBOM, MaxSBOM)
	}
	var doc cdx.BOM
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, "", fmt.Errorf("%w: %s is not CycloneDX JSON: %v", ErrBadSBOM, in.SBOM, err)
	}
	if doc.BOMFormat != cdx.BOMFormat {
		return nil, "", fmt.Errorf("%w: %s: bomFormat %q, want %q", ErrBadSBOM, in.SBOM, doc.BOMFormat, cdx.BOMFormat)
	}
	if doc.Metadata != nil && doc.Metadata.Component != nil && doc.Metadata.Component.Hashes != nil {
		for _, h := range *doc.Metadata.Component.Hashes {
			if h.Algorithm == cdx.HashAlgoSHA256 {
				stated = strings.ToLower(h.Value)
			}
		}
	}
	if stated == "" {
		return nil, "", fmt.Errorf("%w: %s names no SHA-256 of the file it describes (metadata.component.hashes), so it cannot be checked against %s", ErrBadSBOM, in.SBOM, in.Path)
	}
	return b, stated, nil
}
