package publish

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/wharfhq/wharf/publish/oci"
)

// Config is the release contents, read from wharf.toml:
//
//	[[artifact]]
//	name = "engine"
//	kind = "binary"       # binary or image
//	access = "basic"      # public, basic or full
//
//	[[artifact]]
//	name = "treasury-cli"
//	kind = "binary"
//	executable = "treasury"
//	access = "public"
//
// A file that lists artifacts replaces the built-in list (DefaultArtifacts)
// as a whole.
type Config struct {
	Artifacts []ArtifactSpec `toml:"artifact"`
	// MaxImageSize bounds an image archive, in bytes (max_image_size;
	// 0 for 16 GiB): a larger one is refused by wharf check and publish.
	MaxImageSize int64 `toml:"max_image_size"`
}

// maxImageSize is MaxImageSize with its default.
func (c *Config) maxImageSize() int64 {
	if c == nil || c.MaxImageSize <= 0 {
		return oci.DefaultMaxSize
	}
	return c.MaxImageSize
}

// DefaultConfig is the built-in release contents of docs/design.md.
func DefaultConfig() *Config {
	return &Config{Artifacts: DefaultArtifacts()}
}

// LoadConfig reads the config file at path; an empty path means the
// built-in defaults.
func LoadConfig(path string) (*Config, error) {
	if path == "" {
		return DefaultConfig(), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	c, err := ParseConfig(f)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// ParseConfig decodes wharf.toml, fills in defaults (executable = name;
// access basic for binaries, full for images) and validates it. Unknown
// keys are errors, so a typo does not silently publish the defaults.
func ParseConfig(r io.Reader) (*Config, error) {
	c, problems, err := CheckConfig(r)
	if err != nil {
		return nil, err
	}
	if len(problems) > 0 {
		return nil, errors.Join(problems...)
	}
	return c, nil
}

// CheckConfig decodes wharf.toml as ParseConfig does and returns every
// problem of it, one an error: each unknown key once, with its lines and
// the key it may be a typo of, then what Validate finds. The config it
// returns holds the artifacts that have no problem of their own, for
// wharf check to go on with. err is a file that cannot be read or is not
// TOML.
func CheckConfig(r io.Reader) (c *Config, problems []error, err error) {
	doc, err := io.ReadAll(r)
	if err != nil {
		return nil, nil, err
	}
	c = &Config{}
	md, err := toml.Decode(string(doc), c)
	if err != nil {
		return nil, nil, err
	}
	problems = unknownKeys(doc, md.Undecoded())
	if len(c.Artifacts) == 0 {
		return DefaultConfig(), problems, nil
	}
	for i := range c.Artifacts {
		a := &c.Artifacts[i]
		if a.Kind == KindBinary && a.Executable == "" {
			a.Executable = a.Name
		}
		if a.Access == "" {
			a.Access = AccessBasic
			if a.Kind == KindImage {
				a.Access = AccessFull
			}
		}
	}
	if err := c.Validate(); err != nil {
		problems = append(problems, unjoin(err)...)
		var ok []ArtifactSpec
		for _, a := range c.Artifacts {
			if a.Validate() == nil {
				ok = append(ok, a)
			}
		}
		c.Artifacts = ok
	}
	return c, problems, nil
}

// unjoin is the errors an errors.Join holds, or err alone.
func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// Validate checks every artifact and that names are unique. It reports
// every problem, one a line (errors.Join).
func (c *Config) Validate() error {
	if len(c.Artifacts) == 0 {
		return errors.New("no artifacts configured")
	}
	var errs []error
	seen := map[string]bool{}
	for _, a := range c.Artifacts {
		if err := a.Validate(); err != nil {
			errs = append(errs, err)
		}
		if a.Kind == KindImage && a.Executable != "" {
			errs = append(errs, fmt.Errorf("artifact %s: an image has no executable", a.Name))
		}
		if seen[a.Name] {
			errs = append(errs, fmt.Errorf("artifact %s: configured twice", a.Name))
		}
		seen[a.Name] = true
	}
	return errors.Join(errs...)
}

// Input is one file of INPUT_DIR matched to a configured artifact build.
type Input struct {
	Spec  ArtifactSpec
	Build Build
	Path  string // the file
	Form  string // FormExecutable, FormArchive or FormImage
	Size  int64  // of the file
	SBOM  string // the build job's SBOM beside it (Path+SBOMSuffix), "" for none

	// root is the input directory when the Input came from ScanInput: the
	// file is opened through it, so a symbolic link is followed only while
	// it stays inside the directory, also if it is swapped after the scan.
	root *os.Root
}

// open opens the input's file: through the input directory's root when
// it has one (a link out of it is refused), else by its path.
func (in Input) open() (*os.File, error) {
	if in.root == nil {
		return os.Open(in.Path)
	}
	f, err := in.root.Open(filepath.Base(in.Path))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w (symbolic links are followed only inside the input directory)", in.Path, err)
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("open %s: not a regular file", in.Path)
	}
	return f, nil
}

// openSibling opens a file of the input directory beside the input.
func (in Input) openSibling(p string) (*os.File, error) {
	if in.root == nil {
		return os.Open(p)
	}
	f, err := in.root.Open(filepath.Base(p))
	if err != nil {
		return nil, fmt.Errorf("open %s: %w (symbolic links are followed only inside the input directory)", p, err)
	}
	return f, nil
}

// Kind is the artifact kind of the input: KindBinary or KindImage.
func (in Input) Kind() string { return in.Spec.Kind }

// InputError lists what is wrong with an input directory: files that match
// no configured artifact, configured artifacts without a file, and files
// that cannot be used.
type InputError struct {
	Dir     string
	Unknown []string // file names matching no configured artifact
	Missing []string // "engine for mac (engine-macos-arm64 or engine-macos-arm64.tar.gz)"
	Bad     []string // "name: reason"
}

// Error lists every problem, one a line, with the naming rules.
func (e *InputError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "input dir %s:", e.Dir)
	for _, s := range e.Bad {
		fmt.Fprintf(&b, "\n  refused: %s", s)
	}
	for _, s := range e.Unknown {
		fmt.Fprintf(&b, "\n  unknown file %q: matches no configured artifact", s)
	}
	for _, s := range e.Missing {
		fmt.Fprintf(&b, "\n  missing: %s", s)
	}
	if len(e.Unknown) > 0 {
		b.WriteString("\n  (file names: BINARY-OS-PLATFORM for an executable, BINARY-OS-PLATFORM.tar.gz for an archive, IMAGE-PLATFORM.tar for a docker save; OS linux or macos, PLATFORM amd64 or arm64)")
	}
	if len(e.Missing) > 0 {
		b.WriteString("\n  (--allow-missing publishes a partial release on purpose)")
	}
	return b.String()
}

// expected is what a file name of INPUT_DIR may stand for.
type expected struct {
	spec  ArtifactSpec
	build Build
	form  string
}

// inputNames maps every acceptable input file name to what it stands for.
func (c *Config) inputNames() map[string]expected {
	names := map[string]expected{}
	for _, a := range c.Artifacts {
		for _, b := range Builds() {
			switch a.Kind {
			case KindBinary:
				base := fmt.Sprintf("%s-%s-%s", a.Name, b.OS, b.Platform)
				names[base] = expected{a, b, FormExecutable}
				names[base+".tar.gz"] = expected{a, b, FormArchive}
			case KindImage:
				if b.Images {
					names[fmt.Sprintf("%s-%s.tar", a.Name, b.Platform)] = expected{a, b, FormImage}
				}
			}
		}
	}
	return names
}

// ScanInput matches the files of dir to the configured artifacts. Every
// file must match, and every configured artifact build must have a file
// unless allowMissing; all problems are reported at once in an
// *InputError. Only the first bytes of a file are looked at, to check that
// an archive is one. Inputs come in config and build order.
func (c *Config) ScanInput(dir string, allowMissing bool) ([]Input, error) {
	inputs, ierr, err := c.scan(dir, allowMissing)
	if err != nil {
		return nil, err
	}
	if ierr != nil {
		return nil, ierr
	}
	if len(inputs) == 0 {
		return nil, fmt.Errorf("input dir %s: no artifacts to publish", dir)
	}
	return inputs, nil
}

// scan matches the files of dir to the configured artifacts: the inputs
// that are usable and, when anything is wrong, every problem.
func (c *Config) scan(dir string, allowMissing bool) ([]Input, *InputError, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("input dir: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("input dir: %w", err)
	}
	names := c.inputNames()
	ierr := &InputError{Dir: dir}
	found := map[string]Input{}  // by artifact/build
	refused := map[string]bool{} // artifact/build with a refused file: not also missing
	sboms := map[string]string{} // input file name -> its SBOM beside it
	for _, e := range entries {
		name := e.Name()
		if reason := badFileName(name); reason != "" {
			ierr.Bad = append(ierr.Bad, fmt.Sprintf("%q: %s", name, reason))
			continue
		}
		if base, ok := strings.CutSuffix(name, SBOMSuffix); ok {
			if _, ok := names[base]; ok {
				sboms[base] = filepath.Join(dir, name)
				continue
			}
		}
		want, ok := names[name]
		if !ok {
			ierr.Unknown = append(ierr.Unknown, name)
			continue
		}
		p := filepath.Join(dir, name)
		id := want.spec.Name + "/" + want.build.Name
		in, err := inspect(root, p, want)
		if err != nil {
			ierr.Bad = append(ierr.Bad, fmt.Sprintf("%s: %v", name, err))
			refused[id] = true
			continue
		}
		if prev, dup := found[id]; dup {
			ierr.Bad = append(ierr.Bad, fmt.Sprintf("%s and %s: both are %s for %s; keep one", filepath.Base(prev.Path), name, want.spec.Name, want.build.Name))
			continue
		}
		found[id] = in
	}
	var inputs []Input
	for _, a := range c.Artifacts {
		for _, b := range Builds() {
			if a.Kind == KindImage && !b.Images {
				continue
			}
			in, ok := found[a.Name+"/"+b.Name]
			if ok {
				in.SBOM = sboms[filepath.Base(in.Path)]
				delete(sboms, filepath.Base(in.Path))
				inputs = append(inputs, in)
				continue
			}
			if !allowMissing && !refused[a.Name+"/"+b.Name] {
				if a.Kind == KindImage {
					ierr.Missing = append(ierr.Missing, fmt.Sprintf("%s for %s (%s-%s.tar)", a.Name, b.Name, a.Name, b.Platform))
				} else {
					base := fmt.Sprintf("%s-%s-%s", a.Name, b.OS, b.Platform)
					ierr.Missing = append(ierr.Missing, fmt.Sprintf("%s for %s (%s or %s.tar.gz)", a.Name, b.Name, base, base))
				}
			}
		}
	}
	for base, p := range sboms {
		ierr.Bad = append(ierr.Bad, fmt.Sprintf("%s: an SBOM of %s, which is not in the directory", filepath.Base(p), base))
	}
	if len(ierr.Unknown)+len(ierr.Missing)+len(ierr.Bad) > 0 {
		return inputs, ierr, nil
	}
	return inputs, nil, nil
}

// badFileName explains why a name is refused outright, or returns "".
func badFileName(name string) string {
	switch {
	case strings.ContainsAny(name, " \t"):
		return "white space in a file name; artifact names are BINARY-OS-PLATFORM[.tar.gz] or IMAGE-PLATFORM.tar"
	case strings.Contains(name, ".."):
		return `".." in a file name`
	case strings.ContainsFunc(name, func(r rune) bool { return r < 0x20 || r == 0x7f || r == '\\' }):
		return "control character or backslash in a file name"
	}
	return ""
}

// inspect checks one input file, opened through the input directory's
// root: a symbolic link is followed while it stays inside the directory
// (a build job may link one output to two names) and refused when it
// leads out of it, where it could make publish sign and publish any file
// the job can read (the signing key, ~/.ssh).
func inspect(root *os.Root, p string, want expected) (Input, error) {
	name := filepath.Base(p)
	lst, err := root.Lstat(name)
	if err != nil {
		return Input{}, err
	}
	st, err := root.Stat(name)
	if err != nil {
		if lst.Mode()&os.ModeSymlink != 0 {
			return Input{}, errors.New("a symbolic link out of the input directory (or a broken one): copy the file in; links are followed only inside the directory")
		}
		return Input{}, err
	}
	if !st.Mode().IsRegular() {
		return Input{}, fmt.Errorf("not a regular file (%s)", st.Mode().Type())
	}
	in := Input{Spec: want.spec, Build: want.build, Path: p, Form: want.form, Size: st.Size(), root: root}
	f, err := in.open()
	if err != nil {
		return Input{}, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return Input{}, err
	}
	if err := checkForm(want.form, head[:n]); err != nil {
		return Input{}, err
	}
	return in, nil
}

// Binaries returns the configured binaries, in order.
func (c *Config) Binaries() []ArtifactSpec {
	return slices.DeleteFunc(slices.Clone(c.Artifacts), func(a ArtifactSpec) bool { return a.Kind != KindBinary })
}
