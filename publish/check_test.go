package publish_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// elfHeader is the start of a little-endian ELF executable for machine.
func elfHeader(machine uint16) []byte {
	h := make([]byte, 64)
	copy(h, "\x7fELF\x02\x01\x01")
	binary.LittleEndian.PutUint16(h[16:], 2) // ET_EXEC
	binary.LittleEndian.PutUint16(h[18:], machine)
	return h
}

// machoHeader is the start of a 64-bit Mach-O for cpu.
func machoHeader(cpu uint32) []byte {
	h := make([]byte, 32)
	binary.LittleEndian.PutUint32(h, 0xfeedfacf)
	binary.LittleEndian.PutUint32(h[4:], cpu)
	return h
}

// fatHeader is a universal Mach-O of cpus.
func fatHeader(cpus ...uint32) []byte {
	h := make([]byte, 8+20*len(cpus))
	binary.BigEndian.PutUint32(h, 0xcafebabe)
	binary.BigEndian.PutUint32(h[4:], uint32(len(cpus)))
	for i, c := range cpus {
		binary.BigEndian.PutUint32(h[8+20*i:], c)
	}
	return h
}

type tarFile struct {
	name string
	mode int64
	body []byte
}

func tarOf(t testing.TB, gz bool, files ...tarFile) []byte {
	t.Helper()
	var buf bytes.Buffer
	var w *tar.Writer
	var zw *gzip.Writer
	if gz {
		zw = gzip.NewWriter(&buf)
		w = tar.NewWriter(zw)
	} else {
		w = tar.NewWriter(&buf)
	}
	for _, f := range files {
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body)), Typeflag: tar.TypeReg, Format: tar.FormatUSTAR}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(f.body); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func dockerSave(t *testing.T, arch string) []byte {
	t.Helper()
	return tarOf(t, false,
		tarFile{"manifest.json", 0o644, []byte(`[{"Config":"c.json","RepoTags":["x:1"],"Layers":["l/layer.tar"]}]`)},
		tarFile{"c.json", 0o644, []byte(`{"architecture":"` + arch + `","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:` + hex.EncodeToString(sha256Of([]byte("layer"))) + `"]}}`)},
		tarFile{"l/layer.tar", 0o644, []byte("layer")},
	)
}

// TestCheckInput: one directory with a problem of every kind, all listed
// at once; and the same artifacts done right, none.
func TestCheckInput(t *testing.T) {
	cfg := &publish.Config{Artifacts: []publish.ArtifactSpec{
		{Name: "cli", Kind: publish.KindBinary, Executable: "tool", Access: publish.AccessPublic},
		{Name: "engine", Kind: publish.KindBinary, Executable: "engine", Access: publish.AccessBasic},
		{Name: "node", Kind: publish.KindImage, Access: publish.AccessFull},
	}}
	write := func(t *testing.T, files map[string][]byte) string {
		t.Helper()
		dir := t.TempDir()
		for name, b := range files {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	good := map[string][]byte{
		"cli-linux-amd64.tar.gz": tarOf(t, true, tarFile{"tool", 0o755, elfHeader(62)}, tarFile{"README", 0o644, []byte("r")}),
		"cli-linux-arm64":        elfHeader(183),
		"cli-macos-arm64":        fatHeader(0x01000007, 0x0100000c),
		"engine-linux-amd64":     []byte("#!/bin/sh\necho engine\n"),
		"engine-linux-arm64":     elfHeader(183),
		"engine-macos-arm64":     machoHeader(0x0100000c),
		"node-amd64.tar":         dockerSave(t, "amd64"),
		"node-arm64.tar":         dockerSave(t, "arm64"),
	}
	t.Run("OK", func(t *testing.T) {
		inputs, problems, err := cfg.CheckInput(write(t, good))
		if err != nil || len(problems) > 0 || len(inputs) != 8 {
			t.Fatalf("%d inputs, problems %q, err %v; want 8, none", len(inputs), problems, err)
		}
	})
	t.Run("EveryProblem", func(t *testing.T) {
		bad := map[string][]byte{
			"cli-linux-amd64.tar.gz":    tarOf(t, true, tarFile{"bin/tool", 0o755, elfHeader(62)}),
			"cli-linux-arm64":           elfHeader(62),
			"cli-macos-arm64":           machoHeader(0x01000007),
			"engine-linux-amd64":        machoHeader(0x0100000c),
			"engine-linux-arm64":        []byte("MZ not an ELF"),
			"engine-macos-arm64.tar.gz": tarOf(t, true, tarFile{"engine", 0o644, machoHeader(0x0100000c)}),
			"node-amd64.tar":            dockerSave(t, "arm64"),
			"engine-windows-amd64":      []byte("x"),
		}
		_, problems, err := cfg.CheckInput(write(t, bad))
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"cli-linux-amd64.tar.gz: holds no executable tool at its top",
			"cli-linux-arm64: an ELF for x86-64, published for linux/arm64",
			"cli-macos-arm64: a Mach-O without arm64 code, published for macos/arm64",
			"engine-linux-amd64: a Mach-O (macOS) executable, published for linux/amd64",
			"engine-linux-arm64: not an executable (no ELF, Mach-O or #! header)",
			"engine-macos-arm64.tar.gz: engine in the archive is not executable",
			"node-amd64.tar: an image for linux/arm64, published for linux/amd64",
			"engine-windows-amd64: matches no configured artifact",
			"missing: node for arm (node-arm64.tar)",
		}
		for _, w := range want {
			if !slices.ContainsFunc(problems, func(p string) bool { return strings.Contains(p, w) }) {
				t.Errorf("no problem %q in:\n%s", w, strings.Join(problems, "\n"))
			}
		}
		if len(problems) != len(want) {
			t.Errorf("%d problems, want %d:\n%s", len(problems), len(want), strings.Join(problems, "\n"))
		}
	})
	t.Run("Images", func(t *testing.T) {
		for name, body := range map[string][]byte{
			"no manifest.json":             tarOf(t, false, tarFile{"x", 0o644, []byte("x")}),
			"lists 2 images":               tarOf(t, false, tarFile{"manifest.json", 0o644, []byte(`[{},{}]`)}),
			"layer l.tar named in":         tarOf(t, false, tarFile{"manifest.json", 0o644, []byte(`[{"Config":"c.json","Layers":["l.tar"]}]`)}, tarFile{"c.json", 0o644, []byte(`{"os":"linux","architecture":"amd64"}`)}),
			"image config c.json named in": tarOf(t, false, tarFile{"manifest.json", 0o644, []byte(`[{"Config":"c.json"}]`)}),
		} {
			files := maps(good)
			files["node-amd64.tar"] = body
			_, problems, err := cfg.CheckInput(write(t, files))
			if err != nil || len(problems) != 1 || !strings.Contains(problems[0], name) {
				t.Errorf("want one problem with %q, got %q (%v)", name, problems, err)
			}
		}
	})
}

func maps(m map[string][]byte) map[string][]byte {
	c := make(map[string][]byte, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// TestDiscoverConfig: wharf init's artifacts for a build's output parse
// back to themselves, with the built-in settings of built-in names and the
// executable of a ready archive found inside it.
func TestDiscoverConfig(t *testing.T) {
	dir := t.TempDir()
	files := map[string][]byte{
		"treasury-cli-linux-amd64": []byte("#!/bin/sh\n"),
		"engine-macos-arm64":       []byte("#!/bin/sh\n"),
		"agent-linux-arm64.tar.gz": tarOf(t, true, tarFile{"agentd", 0o755, elfHeader(183)}, tarFile{"LICENSE", 0o644, nil}),
		"gateway-amd64.tar":        dockerSave(t, "amd64"),
		"notes.txt":                []byte("x"),
		"engine-windows-amd64.exe": []byte("x"),
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	found, unknown, err := publish.DiscoverConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(unknown, " ") != "engine-windows-amd64.exe notes.txt" {
		t.Errorf("unknown = %q", unknown)
	}
	cfg, err := publish.ParseConfig(bytes.NewReader(publish.ConfigTOML(found, dir, unknown)))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range cfg.Artifacts {
		got = append(got, a.Name+":"+a.Kind+":"+a.Executable+":"+a.Access)
	}
	want := "agent:binary:agentd:basic engine:binary:engine:basic treasury-cli:binary:treasury:public gateway:image::full"
	if strings.Join(got, " ") != want {
		t.Errorf("artifacts = %s\nwant        %s", strings.Join(got, " "), want)
	}
	// The built-in list round-trips too.
	var builtin []publish.Found
	for _, a := range publish.DefaultArtifacts() {
		builtin = append(builtin, publish.Found{Spec: a})
	}
	cfg, err = publish.ParseConfig(bytes.NewReader(publish.ConfigTOML(builtin, "", nil)))
	if err != nil || !slices.Equal(cfg.Artifacts, publish.DefaultArtifacts()) {
		t.Errorf("the built-in list does not round-trip: %v\n%+v", err, cfg)
	}
}

// TestConfigTOMLInputDir: whatever the input directory is called, it only
// ever stands inside a comment; a name that would end the comment (a
// newline, a carriage return, another control character) is quoted.
func TestConfigTOMLInputDir(t *testing.T) {
	found := []publish.Found{{Spec: publish.DefaultArtifacts()[0], Files: []string{"engine-linux-amd64"}}}
	for _, from := range []string{
		"./dist",
		"dist\n[[artifact]]\nname = \"evil\"\nkind = \"binary\"\naccess = \"public\"",
		"dist\r\naccess = \"public\"",
		"dist\n\naccess = \"public\"\n#",
		"dist\x00\x1b[2J\u2028\u00e9",
		"dist\\n\"quoted\"",
	} {
		body := publish.ConfigTOML(found, from, nil)
		cfg, err := publish.ParseConfig(bytes.NewReader(body))
		if err != nil {
			t.Errorf("INPUT_DIR %q: the config does not parse: %v\n%s", from, err, body)
			continue
		}
		if !slices.Equal(cfg.Artifacts, []publish.ArtifactSpec{found[0].Spec}) {
			t.Errorf("INPUT_DIR %q changed the artifacts: %+v\n%s", from, cfg.Artifacts, body)
		}
		for line := range strings.Lines(string(body)) {
			if strings.Contains(line, "dist") && !strings.HasPrefix(line, "#") {
				t.Errorf("INPUT_DIR %q: a line of its own: %q", from, line)
			}
		}
	}
}
