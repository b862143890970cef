package publish

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// Artifact kinds.
const (
	KindBinary = "binary"
	KindImage  = "image"
)

// Access classes: who may download an artifact.
const (
	AccessPublic = "public" // anyone
	AccessBasic  = "basic"  // a member of any organisation
	AccessFull   = "full"   // a member of an organisation with level full
)

// Build is a path segment of the short URLs and the platform it stands for.
type Build struct {
	Name     string // x86, arm, mac
	OS       string // linux, macos
	Platform string // amd64, arm64
	Images   bool   // whether images exist for this build (Linux only)
}

// Builds lists the builds of the spec, in display order.
func Builds() []Build {
	return []Build{
		{Name: "x86", OS: "linux", Platform: "amd64", Images: true},
		{Name: "arm", OS: "linux", Platform: "arm64", Images: true},
		{Name: "mac", OS: "macos", Platform: "arm64"},
	}
}

// LookupBuild finds a build by name; "macos" is an alias of "mac".
func LookupBuild(name string) (Build, bool) {
	if name == "macos" {
		name = "mac"
	}
	for _, b := range Builds() {
		if b.Name == name {
			return b, true
		}
	}
	return Build{}, false
}

// BuildFor finds the build of an os/platform pair.
func BuildFor(goos, platform string) (Build, bool) {
	for _, b := range Builds() {
		if b.OS == goos && b.Platform == platform {
			return b, true
		}
	}
	return Build{}, false
}

// ArtifactSpec is one configured artifact of a release.
type ArtifactSpec struct {
	Name       string `toml:"name" json:"name"`             // e.g. treasury-cli
	Kind       string `toml:"kind" json:"kind"`             // binary or image
	Executable string `toml:"executable" json:"executable"` // name inside the archive (binaries); defaults to Name
	Access     string `toml:"access" json:"access"`         // public, basic or full
}

// DefaultArtifacts is the built-in release contents of docs/design.md.
func DefaultArtifacts() []ArtifactSpec {
	bin := func(name, exe, access string) ArtifactSpec {
		return ArtifactSpec{Name: name, Kind: KindBinary, Executable: exe, Access: access}
	}
	return []ArtifactSpec{
		bin("connector", "connector", AccessBasic),
		bin("cord", "cord", AccessBasic),
		bin("engine", "engine", AccessBasic),
		bin("signer", "signer", AccessBasic),
		bin("treasury-api", "treasury-api", AccessBasic),
		bin("treasury-cli", "treasury", AccessPublic),
		{Name: "treasury-node", Kind: KindImage, Access: AccessFull},
		{Name: "treasury-demo", Kind: KindImage, Access: AccessFull},
	}
}

// Validate reports a configured artifact that cannot be published.
func (a ArtifactSpec) Validate() error {
	var errs []error
	if !validName(a.Name) {
		errs = append(errs, fmt.Errorf("artifact %q: name must be lowercase letters, digits and inner dashes", a.Name))
	}
	if a.Kind != KindBinary && a.Kind != KindImage {
		errs = append(errs, fmt.Errorf("artifact %s: kind %q is neither %q nor %q", a.Name, a.Kind, KindBinary, KindImage))
	}
	switch a.Access {
	case AccessPublic, AccessBasic, AccessFull:
	default:
		errs = append(errs, fmt.Errorf("artifact %s: access %q is none of public, basic, full", a.Name, a.Access))
	}
	if a.Executable != "" && !validExecutable(a.Executable) {
		errs = append(errs, fmt.Errorf("artifact %s: executable %q must be a plain file name of letters, digits and . _ + - (not starting with . or -)", a.Name, a.Executable))
	}
	return errors.Join(errs...)
}

// validExecutable reports whether s may name the executable in an
// archive: it becomes a file name in the install script and in users'
// shells, so nothing a shell would interpret.
func validExecutable(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[0] == '.' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._+-", r)) {
			return false
		}
	}
	return true
}

func validName(s string) bool {
	if s == "" || len(s) > 64 || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// FileName is the canonical file name of an artifact build:
// {binary}-{version}-{os}-{platform}.tar.gz or {image}-{version}-{platform}.tar.
func FileName(kind, name string, v Version, b Build) string {
	if kind == KindImage {
		return fmt.Sprintf("%s-%s-%s.tar", name, v, b.Platform)
	}
	return fmt.Sprintf("%s-%s-%s-%s.tar.gz", name, v, b.OS, b.Platform)
}

// Key is the canonical object key of an artifact build: bin/{version}/... or img/{version}/...
func Key(kind, name string, v Version, b Build) string {
	return path.Join(KindDir(kind), v.String(), FileName(kind, name, v, b))
}

// KindDir is the top-level directory of a kind: bin or img.
func KindDir(kind string) string {
	if kind == KindImage {
		return "img"
	}
	return "bin"
}

// SigKey is the key of the detached signature of key. It is a sibling
// object because MinIO refuses an object "a" beside an object "a/sig".
func SigKey(key string) string { return key + ".sig" }

// SumsKey is the key of the SHA256SUMS of a kind and version.
func SumsKey(kind string, v Version) string {
	return path.Join(KindDir(kind), v.String(), "SHA256SUMS")
}

// Keys of the tree's top-level objects.
const (
	KeyLatest    = "latest"
	KeyPreview   = "preview"
	KeyPublicKey = "dl.pub"
	KeyInstall   = "install"
	KeyRedirects = "_redirects"
	KeyManifest  = "releases.json"
	KeyIndex     = "index.html"
)
