package oci_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish/oci"
)

type file struct {
	name string
	body []byte
	link string // a symbolic link when set
}

func tarOf(tb testing.TB, files ...file) []byte {
	tb.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg}
		if f.link != "" {
			h = &tar.Header{Name: f.name, Mode: 0o777, Typeflag: tar.TypeSymlink, Linkname: f.link}
		}
		if err := tw.WriteHeader(h); err != nil {
			tb.Fatal(err)
		}
		tw.Write(f.body)
	}
	if err := tw.Close(); err != nil {
		tb.Fatal(err)
	}
	return buf.Bytes()
}

func layer(tb testing.TB, content string) []byte {
	return tarOf(tb, file{name: "etc/x", body: []byte(content)})
}

func gz(tb testing.TB, b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func config(arch string, diffIDs ...string) []byte {
	b, _ := json.Marshal(map[string]any{"architecture": arch, "os": "linux", "rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs}})
	return b
}

// dockerSave is a classic docker save archive of the layers.
func dockerSave(tb testing.TB, arch string, layers ...[]byte) []byte {
	var ids, names []string
	files := []file{}
	for i, l := range layers {
		ids = append(ids, oci.Digest(l))
		n := fmt.Sprintf("l%d/layer.tar", i)
		names = append(names, n)
		files = append(files, file{name: n, body: l})
	}
	cfg := config(arch, ids...)
	mj, _ := json.Marshal([]map[string]any{{"Config": oci.Hex(oci.Digest(cfg)) + ".json", "RepoTags": []string{"x:1"}, "Layers": names}})
	return tarOf(tb, append([]file{{name: "manifest.json", body: mj}, {name: oci.Hex(oci.Digest(cfg)) + ".json", body: cfg}}, files...)...)
}

// layout is an OCI image layout: an index of one manifest per arch
// (its config saying cfgArch[i] when given) and an attestation manifest.
func layout(tb testing.TB, archs []string, cfgArch []string, layerType string, layerBody []byte, diffID string) []byte {
	files := []file{{name: "oci-layout", body: []byte(`{"imageLayoutVersion":"1.0.0"}`)}}
	have := map[string]bool{}
	blob := func(b []byte) oci.Descriptor {
		if n := "blobs/sha256/" + oci.Hex(oci.Digest(b)); !have[n] {
			have[n] = true
			files = append(files, file{name: n, body: b})
		}
		return oci.Descriptor{Digest: oci.Digest(b), Size: int64(len(b))}
	}
	var descs []oci.Descriptor
	for i, a := range archs {
		ca := a
		if cfgArch != nil {
			ca = cfgArch[i]
		}
		c := blob(config(ca, diffID))
		c.MediaType = oci.MediaTypeConfig
		l := blob(layerBody)
		l.MediaType = layerType
		mb, _ := json.Marshal(oci.Manifest{SchemaVersion: 2, MediaType: oci.MediaTypeManifest, Config: c, Layers: []oci.Descriptor{l}})
		d := blob(mb)
		d.MediaType = oci.MediaTypeManifest
		d.Platform = &oci.Platform{OS: "linux", Architecture: a}
		descs = append(descs, d)
	}
	att := blob([]byte(`{"schemaVersion":2}`))
	att.MediaType = oci.MediaTypeManifest
	att.Platform = &oci.Platform{OS: "unknown", Architecture: "unknown"}
	descs = append(descs, att)
	ib, _ := oci.NewIndex(descs)
	ix := blob(ib)
	ix.MediaType = oci.MediaTypeIndex
	top, _ := json.Marshal(oci.Index{SchemaVersion: 2, MediaType: oci.MediaTypeIndex, Manifests: []oci.Descriptor{ix}})
	files = append(files, file{name: "index.json", body: top})
	return tarOf(tb, files...)
}

func read(b []byte, arch string, lim oci.Limits) (*oci.Image, error) {
	return oci.Read(bytes.NewReader(b), int64(len(b)), arch, lim)
}

// TestRead: the archives wharf publishes, and what each blob is.
func TestRead(t *testing.T) {
	l1, l2 := layer(t, "one"), layer(t, "two")
	zl := gz(t, l1)
	for _, tc := range []struct {
		name          string
		archive       []byte
		arch          string
		layers        []string // media types
		keepsManifest bool
	}{
		{"DockerSave", dockerSave(t, "amd64", l1, l2), "amd64", []string{oci.MediaTypeLayer, oci.MediaTypeLayer}, false},
		{"DockerSaveNoLayers", dockerSave(t, "arm64"), "arm64", nil, false},
		{"LayoutIndex", layout(t, []string{"amd64", "arm64"}, nil, oci.MediaTypeLayerGzip, zl, oci.Digest(l1)), "arm64", []string{oci.MediaTypeLayerGzip}, true},
		// Bytes after the end-of-archive blocks are part of the file published.
		{"TrailingBytes", append(dockerSave(t, "amd64", l1), make([]byte, 4096)...), "amd64", []string{oci.MediaTypeLayer}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			im, err := read(tc.archive, tc.arch, oci.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := "sha256:"+im.SHA256, oci.Digest(tc.archive); got != want {
				t.Errorf("archive digest %s, its bytes %s", got, want)
			}
			if got, want := im.Platform.String(), "linux/"+tc.arch; got != want {
				t.Errorf("platform %s, want %s", got, want)
			}
			if im.ManifestDigest != oci.Digest(im.Manifest) {
				t.Errorf("manifest digest %s, its bytes %s", im.ManifestDigest, oci.Digest(im.Manifest))
			}
			var m oci.Manifest
			if err := json.Unmarshal(im.Manifest, &m); err != nil {
				t.Fatal(err)
			}
			if len(m.Layers) != len(tc.layers) {
				t.Fatalf("%d layers, want %d", len(m.Layers), len(tc.layers))
			}
			for i, b := range im.Blobs() {
				got := tc.archive[b.Offset : b.Offset+b.Size]
				if oci.Digest(got) != b.Digest {
					t.Errorf("blob %d at %d: bytes of digest %s, descriptor %s", i, b.Offset, oci.Digest(got), b.Digest)
				}
				if i > 0 && b.MediaType != tc.layers[i-1] {
					t.Errorf("layer %d: %s, want %s", i, b.MediaType, tc.layers[i-1])
				}
			}
			if tc.keepsManifest && !bytes.Contains(tc.archive, im.Manifest) {
				t.Errorf("the layout's manifest was rewritten")
			}
		})
	}
}

// TestReadRefuses: every archive that cannot be served as it is, with
// the reason.
func TestReadRefuses(t *testing.T) {
	l1 := layer(t, "one")
	good := dockerSave(t, "amd64", l1)
	corrupt := bytes.Clone(good)
	i := bytes.Index(corrupt, []byte("one"))
	corrupt[i] = 'X'
	other := layer(t, "other")
	foreign := layout(t, []string{"amd64"}, nil, "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip", gz(t, l1), oci.Digest(l1))
	nondist := layout(t, []string{"amd64"}, nil, "application/vnd.oci.image.layer.nondistributable.v1.tar+gzip", gz(t, l1), oci.Digest(l1))
	for _, tc := range []struct {
		name, want string
		archive    []byte
		arch       string
		lim        oci.Limits
	}{
		{"Truncated", "cut off", good[:len(good)/2+100], "amd64", oci.Limits{}},
		{"NotATar", "not a tar archive", []byte(strings.Repeat("x", 2048)), "amd64", oci.Limits{}},
		{"NoImage", "neither a docker save", tarOf(t, file{name: "x", body: []byte("x")}), "amd64", oci.Limits{}},
		{"Corrupt", "the config says", corrupt, "amd64", oci.Limits{}},
		{"OtherPlatform", "an image for linux/arm64, published for linux/amd64", dockerSave(t, "arm64", l1), "amd64", oci.Limits{}},
		{"LayoutOtherPlatform", "an image for linux/arm64, published for linux/amd64", layout(t, []string{"arm64"}, nil, oci.MediaTypeLayer, l1, oci.Digest(l1)), "amd64", oci.Limits{}},
		{"IndexPlatformConfigLacks", "an image for linux/arm64, published for linux/amd64", layout(t, []string{"amd64"}, []string{"arm64"}, oci.MediaTypeLayer, l1, oci.Digest(l1)), "amd64", oci.Limits{}},
		{"Foreign", "foreign or non-distributable", foreign, "amd64", oci.Limits{}},
		{"NonDistributable", "foreign or non-distributable", nondist, "amd64", oci.Limits{}},
		{"OverBound", "over the bound of 1024", good, "amd64", oci.Limits{MaxSize: 1024}},
		{"LayerMissing", "not in the archive", tarOf(t, file{name: "manifest.json", body: []byte(`[{"Config":"c.json","Layers":["l.tar"]}]`)}), "amd64", oci.Limits{}},
		{"TwoImages", "lists 2 images", tarOf(t, file{name: "manifest.json", body: []byte(`[{},{}]`)}), "amd64", oci.Limits{}},
		{"LayerCountDiffers", "the config lists 1 layers, manifest.json 0", tarOf(t,
			file{name: "manifest.json", body: []byte(`[{"Config":"c.json","Layers":[]}]`)},
			file{name: "c.json", body: config("amd64", oci.Digest(other))}), "amd64", oci.Limits{}},
		{"LinkOut", "is not in the archive", tarOf(t,
			file{name: "manifest.json", body: []byte(`[{"Config":"c.json","Layers":[]}]`)},
			file{name: "c.json", link: "../../etc/passwd"}), "amd64", oci.Limits{}},
		{"Twice", "in the archive twice", tarOf(t, file{name: "a", body: []byte("1")}, file{name: "a", body: []byte("2")}), "amd64", oci.Limits{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := read(tc.archive, tc.arch, tc.lim)
			if !errors.Is(err, oci.ErrBadArchive) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read = %v, want ErrBadArchive saying %q", err, tc.want)
			}
		})
	}
}

// FuzzRead: any bytes are an image or ErrBadArchive, and an image's
// blobs are where it says with the digests it says.
func FuzzRead(f *testing.F) {
	l1 := layer(f, "one")
	f.Add(dockerSave(f, "amd64", l1))
	f.Add(layout(f, []string{"amd64", "arm64"}, nil, oci.MediaTypeLayerGzip, gz(f, l1), oci.Digest(l1)))
	f.Fuzz(func(t *testing.T, b []byte) {
		im, err := read(b, "amd64", oci.Limits{})
		if err != nil {
			if !errors.Is(err, oci.ErrBadArchive) {
				t.Fatalf("error not ErrBadArchive: %v", err)
			}
			return
		}
		for _, bl := range im.Blobs() {
			if bl.Offset < 0 || bl.Offset+bl.Size > int64(len(b)) || oci.Digest(b[bl.Offset:bl.Offset+bl.Size]) != bl.Digest {
				t.Fatalf("blob %s at %d+%d is not its bytes", bl.Digest, bl.Offset, bl.Size)
			}
		}
	})
}
