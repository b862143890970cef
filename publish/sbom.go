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

// sbomOf is the CycloneDX JSON SBOM of an input: the build job's file
// beside it when there is one (which must be about the input's bytes),
// else one made from a Go executable's build info, else nil (no SBOM is
// known: a script, an image without one).
func sbomOf(in Input) ([]byte, error) {
	if in.SBOM != "" {
		return readJobSBOM(in)
	}
	info, exe, err := goBuildInfo(in)
	if err != nil {
		if notGo(err) && !bytes.Contains(exe, []byte(buildInfoMagic)) {
			return nil, nil
		}
		return nil, fmt.Errorf("%w: the Go build info embedded in the executable cannot be read: %v", ErrBadSBOM, err)
	}
	if info == nil {
		return nil, nil
	}
	return goSBOM(info, in.Spec.Name)
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

// goBuildInfo reads the Go build info of the input's executable: the
// file itself (only the parts buildinfo needs), or the configured
// executable at the top of an archive; nil for an image. When it cannot,
// it returns the executable's bytes with the error.
func goBuildInfo(in Input) (*buildinfo.BuildInfo, []byte, error) {
	if in.Form != FormExecutable && in.Form != FormArchive {
		return nil, nil, nil
	}
	f, err := in.open()
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if in.Form == FormExecutable {
		info, err := buildinfo.Read(f)
		if err == nil {
			return info, nil, nil
		}
		if _, serr := f.Seek(0, io.SeekStart); serr != nil {
			return nil, nil, serr
		}
		b, rerr := io.ReadAll(io.LimitReader(f, maxExecutable))
		if rerr != nil {
			return nil, nil, rerr
		}
		return nil, b, err
	}
	// An archive that is no gzip'd tar of the executable is refused by
	// its own checks, not here.
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, nil, nil
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err != nil {
			return nil, nil, nil
		}
		if strings.TrimPrefix(h.Name, "./") == in.Spec.Executable {
			b, err := io.ReadAll(io.LimitReader(tr, maxExecutable))
			if err != nil {
				return nil, nil, err
			}
			info, err := buildinfo.Read(bytes.NewReader(b))
			return info, b, err
		}
	}
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

// readJobSBOM reads the build job's SBOM of in and checks it: CycloneDX
// JSON whose described component carries the input's SHA-256.
func readJobSBOM(in Input) ([]byte, error) {
	r, err := in.openSibling(in.SBOM)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	b, err := io.ReadAll(io.LimitReader(r, MaxSBOM+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxSBOM {
		return nil, fmt.Errorf("%w: %s is more than %d bytes", ErrBadSBOM, in.SBOM, MaxSBOM)
	}
	var bom cdx.BOM
	if err := json.Unmarshal(b, &bom); err != nil {
		return nil, fmt.Errorf("%w: %s is not CycloneDX JSON: %v", ErrBadSBOM, in.SBOM, err)
	}
	if bom.BOMFormat != cdx.BOMFormat {
		return nil, fmt.Errorf("%w: %s: bomFormat %q, want %q", ErrBadSBOM, in.SBOM, bom.BOMFormat, cdx.BOMFormat)
	}
	var stated string
	if bom.Metadata != nil && bom.Metadata.Component != nil && bom.Metadata.Component.Hashes != nil {
		for _, h := range *bom.Metadata.Component.Hashes {
			if h.Algorithm == cdx.HashAlgoSHA256 {
				stated = strings.ToLower(h.Value)
			}
		}
	}
	if stated == "" {
		return nil, fmt.Errorf("%w: %s names no SHA-256 of the file it describes (metadata.component.hashes), so it cannot be checked against %s", ErrBadSBOM, in.SBOM, in.Path)
	}
	f, err := in.open()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != stated {
		return nil, fmt.Errorf("%w: %s is about bytes of sha256 %s, %s has %s", ErrBadSBOM, in.SBOM, stated, in.Path, got)
	}
	return b, nil
}
