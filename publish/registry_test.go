package publish_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/oci"
)

// checkRegistry checks the registry tree of every image of release v:
// the version tag is the index releases.json names, every manifest and
// blob it reaches is there with its digest, and the index and every
// manifest carry a cosign signature by the release key.
func checkRegistry(t *testing.T, s publish.Store, signer publish.Signer, v string) publish.Release {
	t.Helper()
	rel, ok := manifest(t, s).Find(v)
	if !ok {
		t.Fatalf("%s not in releases.json", v)
	}
	if len(rel.Images) != 2 {
		t.Fatalf("releases.json lists %d images of %s, want 2", len(rel.Images), v)
	}
	pub, _ := signer.PublicKey(context.Background())
	for _, im := range rel.Images {
		index := readKey(t, s, publish.RegistryManifestKey(im.Name, v))
		if oci.Digest(index) != im.Index || int64(len(index)) != im.IndexSize {
			t.Errorf("%s:%s has digest %s, releases.json says %s", im.Name, v, oci.Digest(index), im.Index)
		}
		if im.Repository != "dl.example.com/"+im.Name || im.Access != publish.AccessFull {
			t.Errorf("%s: repository %q access %q", im.Name, im.Repository, im.Access)
		}
		var idx oci.Index
		if err := json.Unmarshal(readKey(t, s, publish.RegistryManifestKey(im.Name, im.Index)), &idx); err != nil {
			t.Fatal(err)
		}
		if len(idx.Manifests) != 2 || idx.Manifests[0].Platform.Architecture != "amd64" || idx.Manifests[1].Platform.Architecture != "arm64" {
			t.Fatalf("%s: index %s", im.Name, index)
		}
		digests := []string{im.Index}
		for i, d := range idx.Manifests {
			if d.Digest != im.Platforms[i].Manifest {
				t.Errorf("%s: index lists %s, releases.json %s", im.Name, d.Digest, im.Platforms[i].Manifest)
			}
			digests = append(digests, d.Digest)
			mb := readKey(t, s, publish.RegistryManifestKey(im.Name, d.Digest))
			var m oci.Manifest
			if err := json.Unmarshal(mb, &m); err != nil || oci.Digest(mb) != d.Digest {
				t.Fatalf("%s: manifest %s: %v", im.Name, d.Digest, err)
			}
			for _, b := range append([]oci.Descriptor{m.Config}, m.Layers...) {
				if got := oci.Digest(readKey(t, s, publish.RegistryBlobKey(im.Name, b.Digest))); got != b.Digest {
					t.Errorf("%s: blob %s holds %s", im.Name, b.Digest, got)
				}
			}
		}
		for _, d := range digests {
			sm := readKey(t, s, publish.RegistryManifestKey(im.Name, oci.SignatureTag(d)))
			pd, sig, err := oci.ParseSignatureManifest(sm)
			if err != nil {
				t.Fatal(err)
			}
			payload := readKey(t, s, publish.RegistryBlobKey(im.Name, pd))
			if err := publish.VerifyImageSignature(pub, d, payload, []byte(sig)); err != nil {
				t.Errorf("%s@%s: %v", im.Name, d, err)
			}
			if ref, _, _ := oci.ParseSignaturePayload(payload); ref != im.Repository {
				t.Errorf("payload names %q, want %q", ref, im.Repository)
			}
			if err := publish.VerifyImageSignature(pub, im.Platforms[0].Manifest, payload, []byte(sig)); d != im.Platforms[0].Manifest && err == nil {
				t.Errorf("the signature of %s verifies for %s", d, im.Platforms[0].Manifest)
			}
		}
	}
	return *rel
}

// TestPublishRegistry: each release's images as a registry tree, the
// layers a patch release did not change stored once, the tags of
// latest following the pointer, a re-run writing nothing.
func TestPublishRegistry(t *testing.T) {
	ctx := context.Background()
	s := dirStore(t, t.TempDir())
	signer := fixedSigner(t)
	p := newPublisher(t, s, signer)
	in := demoInputs(t, "a")
	if _, err := p.Publish(ctx, "26.1.1", scan(t, in)); err != nil {
		t.Fatal(err)
	}
	r1 := checkRegistry(t, s, signer, "26.1.1")
	page := string(readKey(t, s, publish.KeyIndex))
	for _, want := range []string{
		"docker pull dl.example.com/treasury-node:26.1.1",
		"docker pull dl.example.com/treasury-node@" + r1.Images[1].Index,
		"kubectl create secret docker-registry wharf-pull --docker-server=dl.example.com",
		"cosign verify --key dl.pub --insecure-ignore-tlog=true dl.example.com/treasury-node:26.1.1",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("index.html has no %q", want)
		}
	}

	// 26.1.2 changes the amd64 layer of treasury-node only.
	writeFile(t, filepath.Join(in, "treasury-node-amd64.tar"), imageTar(t, "changed", "amd64"), 0o644)
	res, err := p.Publish(ctx, "26.1.2", scan(t, in))
	if err != nil {
		t.Fatal(err)
	}
	r2 := checkRegistry(t, s, signer, "26.1.2")
	var blobs []string
	for _, k := range res.Written {
		if strings.Contains(k, "/blobs/") {
			blobs = append(blobs, k)
		}
	}
	// The changed layer, its config, and the signature payload and
	// signature config of the new manifest and of the new index;
	// treasury-demo is the same image again, its arm64 image too.
	if len(blobs) != 6 {
		t.Errorf("26.1.2 wrote %d blobs, want 6 (a layer, a config, 2 payloads, 2 signature configs):\n%s", len(blobs), strings.Join(blobs, "\n"))
	}
	if r1.Images[0].Index != r2.Images[0].Index || r1.Images[1].Index == r2.Images[1].Index {
		t.Errorf("indexes 26.1.1 %s %s, 26.1.2 %s %s: want treasury-demo's the same, treasury-node's new",
			r1.Images[0].Index, r1.Images[1].Index, r2.Images[0].Index, r2.Images[1].Index)
	}
	if got := oci.Digest(readKey(t, s, publish.RegistryManifestKey("treasury-node", "latest"))); got != r2.Images[1].Index {
		t.Errorf("treasury-node:latest is %s, want 26.1.2's %s", got, r2.Images[1].Index)
	}
	if got := oci.Digest(readKey(t, s, publish.RegistryManifestKey("treasury-node", "26.1.1"))); got != r1.Images[1].Index {
		t.Errorf("treasury-node:26.1.1 is %s, want %s for ever", got, r1.Images[1].Index)
	}

	// The same release again writes nothing.
	before := snapshot(t, s)
	res, err = p.Publish(ctx, "26.1.2", scan(t, in))
	if err != nil || !res.Existing {
		t.Fatalf("publish again = %v, existing %v", err, res != nil && res.Existing)
	}
	sameSnapshot(t, before, snapshot(t, s))
}

// TestPublishRefusesBadImage: an image archive a registry could not
// serve (cut off, a layer that is not its config's diff_id, another
// platform than its name says, an index entry whose config is of another
// platform, foreign or non-distributable layers, over the size bound) is
// refused by wharf check (CheckInput) and by publish with the reason,
// before any write; the OCI layout done right publishes.
func TestPublishRefusesBadImage(t *testing.T) {
	good := imageTar(t, "x", "amd64")
	// A byte of the layer changed: its digest is no longer the config's diff_id.
	corrupt := bytes.Clone(good)
	corrupt[bytes.Index(corrupt, []byte("x\n"))] = 'y'
	for name, tc := range map[string]struct {
		body []byte
		want string
	}{
		"Truncated":     {good[:len(good)-1100], "cut off"},
		"Corrupt":       {corrupt, "the config says"},
		"OtherPlatform": {imageTar(t, "x", "arm64"), "an image for linux/arm64, published for linux/amd64"},
		"LayoutOK":      {imageLayout(t, "amd64", "amd64", oci.MediaTypeLayer), ""},
		// An index entry for linux/amd64 whose config is linux/arm64.
		"IndexPlatformConfigLacks": {imageLayout(t, "amd64", "arm64", oci.MediaTypeLayer), "an image for linux/arm64, published for linux/amd64"},
		"Foreign":                  {imageLayout(t, "amd64", "amd64", "application/vnd.docker.image.rootfs.foreign.diff.tar.gzip"), "foreign or non-distributable"},
		"NonDistributable":         {imageLayout(t, "amd64", "amd64", "application/vnd.oci.image.layer.nondistributable.v1.tar"), "foreign or non-distributable"},
	} {
		t.Run(name, func(t *testing.T) {
			in := demoInputs(t, "a")
			writeFile(t, filepath.Join(in, "treasury-node-amd64.tar"), tc.body, 0o644)
			_, problems, err := publish.DefaultConfig().CheckInput(in)
			s := dirStore(t, t.TempDir())
			if tc.want == "" {
				// The fixture's own check: the same archive done right publishes.
				if err != nil || len(problems) != 0 {
					t.Fatalf("CheckInput = %q, %v; want no problem", problems, err)
				}
				if _, err := newPublisher(t, s, fixedSigner(t)).Publish(context.Background(), "26.1.1", scan(t, in)); err != nil {
					t.Fatalf("Publish = %v", err)
				}
				return
			}
			if err != nil || len(problems) != 1 || !strings.Contains(problems[0], tc.want) {
				t.Errorf("CheckInput = %q, %v; want one problem %q", problems, err, tc.want)
			}
			_, err = newPublisher(t, s, fixedSigner(t)).Publish(context.Background(), "26.1.1", scan(t, in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Publish = %v, want %q", err, tc.want)
			}
			if got := snapshot(t, s); len(got) != 0 {
				t.Errorf("a refused publish wrote %d objects", len(got))
			}
		})
	}
	t.Run("OverBound", func(t *testing.T) {
		in := demoInputs(t, "a")
		cfg := publish.DefaultConfig()
		cfg.MaxImageSize = 1024
		_, problems, _ := cfg.CheckInput(in)
		if len(problems) != 4 || !strings.Contains(problems[0], "over the bound of 1024") {
			t.Errorf("CheckInput = %q, want the 4 images over the bound", problems)
		}
		s := dirStore(t, t.TempDir())
		p := newPublisher(t, s, fixedSigner(t))
		p.Config = cfg
		if _, err := p.Publish(context.Background(), "26.1.1", scan(t, in)); !errors.Is(err, oci.ErrBadArchive) {
			t.Errorf("Publish = %v, want ErrBadArchive", err)
		}
		if got := snapshot(t, s); len(got) != 0 {
			t.Errorf("a refused publish wrote %d objects", len(got))
		}
	})
}

// TestPublishImagesBaseURLPath: a release with images and a base URL with
// a path is refused before anything is written, with ErrRegistryPath and
// the root URL to use; the same base URL at the host's root publishes.
func TestPublishImagesBaseURLPath(t *testing.T) {
	for _, tc := range []struct {
		base string
		ok   bool
	}{
		{"https://dl.example.com/dl/", false},
		{"https://dl.example.com/dl", false},
		{"https://dl.example.com/a/b/", false},
		{"https://dl.example.com/", true},
		{"https://dl.example.com", true},
	} {
		t.Run(tc.base, func(t *testing.T) {
			root := t.TempDir()
			s := dirStore(t, root)
			p, err := publish.NewPublisher(s, fixedSigner(t), publish.DefaultConfig(), tc.base)
			if err != nil {
				t.Fatal(err)
			}
			_, err = p.Publish(context.Background(), "26.1.1", scan(t, demoInputs(t, "one")))
			if tc.ok {
				if err != nil {
					t.Fatalf("Publish with base URL %s: %v", tc.base, err)
				}
				return
			}
			if !errors.Is(err, publish.ErrRegistryPath) || !strings.Contains(err.Error(), "https://dl.example.com ") {
				t.Fatalf("Publish with base URL %s = %v, want ErrRegistryPath naming https://dl.example.com", tc.base, err)
			}
			if list, _ := s.List(context.Background(), ""); len(list) != 0 {
				t.Errorf("%d objects written, the first %s", len(list), list[0].Key)
			}
		})
	}
}
