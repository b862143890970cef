package publish_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

func TestParseConfig(t *testing.T) {
	t.Run("Defaults", func(t *testing.T) {
		c, err := publish.LoadConfig("")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(c.Artifacts, publish.DefaultArtifacts()) {
			t.Errorf("defaults = %+v", c.Artifacts)
		}
	})
	t.Run("OK", func(t *testing.T) {
		c, err := publish.ParseConfig(strings.NewReader(`
[[artifact]]
name = "engine"
kind = "binary"

[[artifact]]
name = "treasury-cli"
kind = "binary"
executable = "treasury"
access = "public"

[[artifact]]
name = "treasury-node"
kind = "image"
`))
		if err != nil {
			t.Fatal(err)
		}
		want := []publish.ArtifactSpec{
			{Name: "engine", Kind: "binary", Executable: "engine", Access: "basic"},
			{Name: "treasury-cli", Kind: "binary", Executable: "treasury", Access: "public"},
			{Name: "treasury-node", Kind: "image", Access: "full"},
		}
		if !reflect.DeepEqual(c.Artifacts, want) {
			t.Errorf("artifacts = %+v, want %+v", c.Artifacts, want)
		}
	})
	bad := []struct{ name, toml, want string }{
		{"UnknownKey", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nacess = \"public\"\n", "unknown key artifact.acess on line 4 (did you mean artifact.access?)"},
		{"BadKind", "[[artifact]]\nname = \"engine\"\nkind = \"library\"\n", "kind \"library\""},
		{"BadAccess", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\naccess = \"everyone\"\n", "access \"everyone\""},
		{"BadName", "[[artifact]]\nname = \"../engine\"\nkind = \"binary\"\n", "name must be"},
		{"Space", "[[artifact]]\nname = \"my engine\"\nkind = \"binary\"\n", "name must be"},
		{"BadExecutable", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nexecutable = \"../x\"\n", "plain file name"},
		{"ExecutableCommandSubstitution", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nexecutable = \"x$(id)\"\n", "plain file name"},
		{"ExecutableQuote", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nexecutable = \"x'; rm -rf ~; '\"\n", "plain file name"},
		{"ExecutableDash", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nexecutable = \"-rf\"\n", "plain file name"},
		{"Twice", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\n[[artifact]]\nname = \"engine\"\nkind = \"image\"\n", "configured twice"},
		{"NotTOML", "[[artifact]\n", "toml"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			_, err := publish.ParseConfig(strings.NewReader(tt.toml))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("ParseConfig = %v, want an error mentioning %q", err, tt.want)
			}
		})
	}
}

// TestConfigUnknownKeys: each unknown key is reported once, with the
// lines it is on and the known key within two edits of it; a key under an
// unknown table is not reported apart from it; every problem is listed.
func TestConfigUnknownKeys(t *testing.T) {
	var five strings.Builder
	for _, name := range []string{"connector", "cord", "engine", "signer", "treasury-api"} {
		five.WriteString("[[artifact]]\nname = \"" + name + "\"\nkind = \"binary\"\nacces = \"basic\"\n\n")
	}
	tests := []struct{ name, toml, want string }{
		{"SameKeyFiveTimes", five.String(), "unknown key artifact.acces on lines 4, 9, 14, 19, 24 (did you mean artifact.access?)"},
		{"TableTypo", "[[artifacts]]\nname = \"engine\"\nkind = \"binary\"\n", "unknown key artifacts on line 1 (did you mean artifact?)"},
		{"NothingClose", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nplatform = \"x86\"\n", "unknown key artifact.platform on line 4 (an artifact has name, kind, executable, access)"},
		{"Quoted", "[[artifact]]\nname = \"engine\"\n\"kinds\" = \"binary\"\n", "unknown key artifact.kinds on line 3 (did you mean artifact.kind?)"},
		{"EveryProblem", "[[artifact]]\nname = \"engine\"\nkind = \"binary\"\nacess = \"x\"\n[[artifact]]\nname = \"cord\"\nkind = \"library\"\n",
			"unknown key artifact.acess on line 4 (did you mean artifact.access?)\nartifact cord: kind \"library\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := publish.ParseConfig(strings.NewReader(tt.toml))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("ParseConfig = %v, want %q", err, tt.want)
			}
			if n := strings.Count(err.Error(), "unknown key"); n != 1 {
				t.Errorf("%d unknown-key problems, want 1:\n%v", n, err)
			}
		})
	}
}

func TestScanInput(t *testing.T) {
	cfg := publish.DefaultConfig()
	t.Run("Complete", func(t *testing.T) {
		dir := demoInputs(t, "a")
		inputs, err := cfg.ScanInput(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		if len(inputs) != 6*3+2*2 {
			t.Fatalf("%d inputs, want 22", len(inputs))
		}
		first := inputs[0]
		if first.Spec.Name != "connector" || first.Build.Name != "x86" || first.Form != publish.FormExecutable {
			t.Errorf("first input = %+v", first)
		}
	})
	t.Run("SymlinkInside", func(t *testing.T) {
		// A build job may link one output to two names inside the directory.
		dir := demoInputs(t, "a")
		os.Mkdir(filepath.Join(dir, "build"), 0o755)
		p := filepath.Join(dir, "engine-linux-amd64")
		os.Rename(p, filepath.Join(dir, "build", "engine"))
		if err := os.Symlink("build/engine", p); err != nil {
			t.Fatal(err)
		}
		os.Remove(filepath.Join(dir, "build"))
		_, err := cfg.ScanInput(dir, false)
		var ierr *publish.InputError
		if !errors.As(err, &ierr) || len(ierr.Unknown) != 1 || ierr.Unknown[0] != "build" || len(ierr.Bad) != 0 {
			t.Fatalf("ScanInput = %v, want only the directory build reported", err)
		}
	})
	t.Run("ReadyArchive", func(t *testing.T) {
		dir := demoInputs(t, "a")
		raw := filepath.Join(dir, "engine-linux-amd64")
		b, _ := os.ReadFile(raw)
		os.Remove(raw)
		f, _ := os.Create(raw + ".tar.gz")
		publish.Pack(f, "engine", strings.NewReader(string(b)), int64(len(b)))
		f.Close()
		inputs, err := cfg.ScanInput(dir, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range inputs {
			if in.Spec.Name == "engine" && in.Build.Name == "x86" && in.Form != publish.FormArchive {
				t.Errorf("engine x86 form = %s, want archive", in.Form)
			}
		}
	})

	tests := []struct {
		name         string
		change       func(dir string)
		allowMissing bool
		unknown      []string
		missing      int
		bad          string
	}{
		{name: "Unknown", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "engine-windows-amd64"), []byte("x"), 0o644)
			os.WriteFile(filepath.Join(dir, "README"), []byte("x"), 0o644)
		}, unknown: []string{"README", "engine-windows-amd64"}},
		{name: "Missing", change: func(dir string) {
			os.Remove(filepath.Join(dir, "engine-macos-arm64"))
			os.Remove(filepath.Join(dir, "treasury-node-arm64.tar"))
		}, missing: 2},
		{name: "MissingAllowed", change: func(dir string) {
			os.Remove(filepath.Join(dir, "engine-macos-arm64"))
		}, allowMissing: true},
		{name: "Space", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "engine linux amd64"), []byte("x"), 0o644)
		}, bad: "white space"},
		{name: "DotDot", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "engine..tar.gz"), []byte("x"), 0o644)
		}, bad: `".."`},
		{name: "NotGzip", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "cord-linux-arm64.tar.gz"), []byte("plain"), 0o644)
			os.Remove(filepath.Join(dir, "cord-linux-arm64"))
		}, bad: "not gzip"},
		{name: "NotTar", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "treasury-demo-amd64.tar"), []byte("plain"), 0o644)
		}, bad: "not a tar"},
		{name: "Both", change: func(dir string) {
			f, _ := os.Create(filepath.Join(dir, "cord-linux-arm64.tar.gz"))
			publish.Pack(f, "cord", strings.NewReader("x"), 1)
			f.Close()
		}, bad: "keep one"},
		{name: "Directory", change: func(dir string) {
			os.Remove(filepath.Join(dir, "signer-linux-amd64"))
			os.Mkdir(filepath.Join(dir, "signer-linux-amd64"), 0o755)
		}, bad: "not a regular file"},
		{name: "SymlinkOut", change: func(dir string) {
			secret := filepath.Join(filepath.Dir(dir), "dl.key")
			os.WriteFile(secret, []byte("-----BEGIN PRIVATE KEY-----\n"), 0o600)
			p := filepath.Join(dir, "treasury-cli-linux-amd64")
			os.Remove(p)
			os.Symlink(secret, p)
		}, bad: "symbolic link out of the input directory"},
		{name: "SymlinkOutRelative", change: func(dir string) {
			p := filepath.Join(dir, "treasury-cli-linux-amd64")
			os.Remove(p)
			os.Symlink("../../../../../../../../etc/passwd", p)
		}, bad: "symbolic link out of the input directory"},
		{name: "Empty", change: func(dir string) {
			os.WriteFile(filepath.Join(dir, "signer-linux-amd64"), nil, 0o755)
		}, bad: "empty file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := demoInputs(t, "a")
			tt.change(dir)
			inputs, err := cfg.ScanInput(dir, tt.allowMissing)
			if tt.unknown == nil && tt.missing == 0 && tt.bad == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(inputs) != 21 {
					t.Errorf("%d inputs, want 21", len(inputs))
				}
				return
			}
			var ierr *publish.InputError
			if !errors.As(err, &ierr) {
				t.Fatalf("ScanInput = %v, want an *InputError", err)
			}
			if tt.unknown != nil && !reflect.DeepEqual(ierr.Unknown, tt.unknown) {
				t.Errorf("unknown = %q, want %q", ierr.Unknown, tt.unknown)
			}
			if len(ierr.Missing) != tt.missing {
				t.Errorf("missing = %q, want %d", ierr.Missing, tt.missing)
			}
			if tt.missing > 0 && !strings.Contains(err.Error(), "--allow-missing") {
				t.Errorf("error does not mention --allow-missing: %v", err)
			}
			if tt.bad != "" && !strings.Contains(strings.Join(ierr.Bad, "\n"), tt.bad) {
				t.Errorf("refused = %q, want one mentioning %q", ierr.Bad, tt.bad)
			}
		})
	}
}
