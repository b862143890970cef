package publish

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
)

// Found is an artifact that DiscoverConfig recognised in an input
// directory, with the files it was recognised from.
type Found struct {
	Spec  ArtifactSpec
	Files []string
}

// DiscoverConfig makes the release contents for the files of an input
// directory: an artifact for every name found in file names of the shapes
// publish takes, with the built-in settings of a built-in name (access,
// executable) and the defaults otherwise (binaries basic, images full,
// the executable named as the binary or as the one executable at the top
// of its ready archive). Files of another shape are returned as unknown.
func DiscoverConfig(dir string) (found []Found, unknown []string, err error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("input dir: %w", err)
	}
	defaults := map[string]ArtifactSpec{}
	for _, a := range DefaultArtifacts() {
		defaults[a.Name] = a
	}
	index := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		spec, archive, ok := parseInputName(name)
		if !ok || e.IsDir() {
			unknown = append(unknown, name)
			continue
		}
		i, seen := index[spec.Name]
		if !seen {
			if d, ok := defaults[spec.Name]; ok && d.Kind == spec.Kind {
				spec = d
			}
			i = len(found)
			index[spec.Name] = i
			found = append(found, Found{Spec: spec})
		}
		f := &found[i]
		if f.Spec.Kind != spec.Kind {
			unknown = append(unknown, name)
			continue
		}
		f.Files = append(f.Files, name)
		if archive && f.Spec.Executable == f.Spec.Name {
			if exe := soleExecutable(path.Join(dir, name)); exe != "" {
				f.Spec.Executable = exe
			}
		}
	}
	slices.SortStableFunc(found, func(a, b Found) int {
		if a.Spec.Kind != b.Spec.Kind {
			return kindRank(a.Spec.Kind) - kindRank(b.Spec.Kind)
		}
		return strings.Compare(a.Spec.Name, b.Spec.Name)
	})
	return found, unknown, nil
}

// parseInputName reads an input file name: NAME-OS-PLATFORM[.tar.gz] (a
// binary) or NAME-PLATFORM.tar (an image).
func parseInputName(file string) (spec ArtifactSpec, archive, ok bool) {
	base, isTar := strings.CutSuffix(file, ".tar")
	if isTar {
		name, platform, ok := cutLast(base)
		if !ok || !knownPlatform(platform) || !validName(name) {
			return ArtifactSpec{}, false, false
		}
		return ArtifactSpec{Name: name, Kind: KindImage, Access: AccessFull}, false, true
	}
	base, archive = strings.CutSuffix(file, ".tar.gz")
	rest, platform, ok := cutLast(base)
	if !ok || !knownPlatform(platform) {
		return ArtifactSpec{}, false, false
	}
	name, goos, ok := cutLast(rest)
	if !ok || (goos != "linux" && goos != "macos") || !validName(name) {
		return ArtifactSpec{}, false, false
	}
	return ArtifactSpec{Name: name, Kind: KindBinary, Executable: name, Access: AccessBasic}, archive, true
}

func cutLast(s string) (before, after string, ok bool) {
	i := strings.LastIndexByte(s, '-')
	if i < 0 {
		return "", "", false
	}
	return s[:i], s[i+1:], true
}

func knownPlatform(p string) bool { return p == "amd64" || p == "arm64" }

// soleExecutable returns the name of the one executable regular file at
// the top of a .tar.gz, "" when there is none or more than one.
func soleExecutable(p string) string {
	f, err := os.Open(p)
	if err != nil {
		return ""
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return ""
	}
	tr := tar.NewReader(zr)
	var exes []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return ""
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "./")
		if h.Typeflag == tar.TypeReg && h.Mode&0o111 != 0 && !strings.Contains(name, "/") && validExecutable(name) {
			exes = append(exes, name)
		}
	}
	if len(exes) != 1 {
		return ""
	}
	return exes[0]
}

// ConfigTOML writes wharf.toml for artifacts, every key explained in a
// comment; from names the input directory it came from ("" for the
// built-in list) and unknown the files it did not recognise.
func ConfigTOML(found []Found, from string, unknown []string) []byte {
	var b bytes.Buffer
	b.WriteString("# wharf.toml: what a release holds, for wharf publish --config wharf.toml.\n")
	if from != "" {
		from = commentText(from)
		fmt.Fprintf(&b, "# Written by wharf init from the files of %s; edit it freely, then check it\n# against a build's output with: wharf check --config wharf.toml %s\n", from, from)
	} else {
		b.WriteString("# Written by wharf init from the built-in list (what publish takes without\n# --config); edit it freely, then check it with: wharf check --config wharf.toml DIR\n")
	}
	b.WriteString(`#
# Each [[artifact]] is one binary or image:
#   name        its name in URLs and file names: lowercase letters, digits, inner dashes
#   kind        "binary": a .tar.gz per OS and platform (linux/amd64, linux/arm64, macos/arm64)
#               "image": a docker save .tar per platform (linux/amd64, linux/arm64)
#   executable  binaries only: the executable's name in the archive (default: the name);
#               the install script installs this file
#   access      who may download it: "public" (anyone, no login), "basic" or "full"
#               (organisations of that level; full includes basic)
#
# The build's output (INPUT_DIR) names files without the version:
#   NAME-OS-PLATFORM         an executable, packed into a .tar.gz by publish
#   NAME-OS-PLATFORM.tar.gz  a ready archive, published as it is
#   NAME-PLATFORM.tar        an image (docker save)
# Listing artifacts here replaces the built-in list as a whole.
`)
	if len(unknown) > 0 {
		b.WriteString("#\n# Files not recognised (no artifact made for them):\n")
		for _, u := range unknown {
			fmt.Fprintf(&b, "#   %s\n", strconv.QuoteToASCII(u))
		}
	}
	for _, f := range found {
		a := f.Spec
		b.WriteString("\n")
		if len(f.Files) > 0 {
			fmt.Fprintf(&b, "# from %s\n", commentText(strings.Join(f.Files, ", ")))
		}
		fmt.Fprintf(&b, "[[artifact]]\nname = %s\nkind = %s\n", strconv.Quote(a.Name), strconv.Quote(a.Kind))
		if a.Kind == KindBinary {
			fmt.Fprintf(&b, "executable = %s\n", strconv.Quote(a.Executable))
		}
		fmt.Fprintf(&b, "access = %s\n", strconv.Quote(a.Access))
	}
	return b.Bytes()
}

// commentText is s as it may stand in a TOML comment: as it is when it is
// printable ASCII, else quoted with Go's escapes, so that no newline (nor
// any other control character TOML refuses in a comment) ends the comment
// and starts a line of the file's own.
func commentText(s string) string {
	for _, r := range s {
		if r < ' ' || r > '~' {
			return strconv.QuoteToASCII(s)
		}
	}
	return s
}
