package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

// twoReleaseConfigs writes the configs of a tree whose connector changed
// access class: basic in 26.1.1 (old.toml), public from 26.1.2 on
// (new.toml); treasury-cli is public in both.
func twoReleaseConfigs(t *testing.T, dir string) (oldConf, newConf string) {
	t.Helper()
	conf := func(connector string) string {
		var b strings.Builder
		for _, a := range publish.DefaultArtifacts() {
			access := a.Access
			if a.Name == "connector" {
				access = connector
			}
			b.WriteString("[[artifact]]\nname = \"" + a.Name + "\"\nkind = \"" + a.Kind + "\"\naccess = \"" + access + "\"\n")
			if a.Executable != "" {
				b.WriteString("executable = \"" + a.Executable + "\"\n")
			}
			b.WriteString("\n")
		}
		return b.String()
	}
	oldConf, newConf = filepath.Join(dir, "old.toml"), filepath.Join(dir, "new.toml")
	writeTestFile(t, oldConf, []byte(conf(publish.AccessBasic)))
	writeTestFile(t, newConf, []byte(conf(publish.AccessPublic)))
	return oldConf, newConf
}

// TestHostingS3Policy applies the policy of wharf hosting s3-policy to a
// real MinIO bucket that wharf publish filled with two releases, the
// connector basic in the first and public in the second. The policy is
// read from the bucket's releases.json (--store): every object name ever
// published is then fetched anonymously from MinIO and from wharf serve
// over the same bucket, and MinIO never answers 200 where wharf refuses
// (the config alone, which calls the connector public, would open its
// basic 26.1.1 builds). Listings are refused.
func TestHostingS3Policy(t *testing.T) {
	m := testenv.SharedMinIO(t)
	bucketURL, _ := s3test.Bucket(t, m)
	for k, v := range s3test.Env(m) {
		t.Setenv(k, v)
	}
	dir := t.TempDir()
	oldConf, newConf := twoReleaseConfigs(t, dir)
	store := bucketURL + "/dl"
	mustRun(t, "keygen", "--out", filepath.Join(dir, "dl.key"))
	mustRun(t, "publish", "--version", "26.1.1", "--key", filepath.Join(dir, "dl.key"), "--store", store, "--config", oldConf,
		"--s3-endpoint", m.URL(), "--base-url", "https://dl.example.com", demoInputDir(t, "old"))
	mustRun(t, "publish", "--version", "26.1.2", "--key", filepath.Join(dir, "dl.key"), "--store", store, "--config", newConf,
		"--s3-endpoint", m.URL(), "--base-url", "https://dl.example.com", demoInputDir(t, "new"))
	bucket := strings.TrimPrefix(bucketURL, "s3://")

	t.Run("RefusedWithoutManifest", func(t *testing.T) {
		_, _, err := pubRun(t, "hosting", "s3-policy", "--bucket", bucket, "--prefix", "dl", "--config", newConf)
		if err == nil || !strings.Contains(err.Error(), "--config-only") {
			t.Errorf("without a manifest: err = %v, want a refusal naming --config-only", err)
		}
		out, stderr, err := pubRun(t, "hosting", "s3-policy", "--bucket", bucket, "--prefix", "dl", "--config", newConf, "--config-only")
		if err != nil || !strings.Contains(stderr, "warning") || !strings.Contains(stderr, "old builds") {
			t.Errorf("--config-only: err = %v, stderr %q; want a warning naming the risk", err, stderr)
		}
		if !strings.Contains(out, "/connector-*-") {
			t.Errorf("--config-only policy does not open the connector (public in the config):\n%s", out)
		}
	})

	policy := mustRun(t, "hosting", "s3-policy", "--bucket", bucket, "--prefix", "dl", "--config", newConf,
		"--store", store, "--s3-endpoint", m.URL())
	if strings.Contains(policy, "connector") {
		t.Errorf("the policy opens the connector, basic in 26.1.1:\n%s", policy)
	}
	m.SetBucketPolicy(t, bucket, policy)

	// wharf serve over the same bucket: the reference.
	db := filepath.Join(dir, "wharf.db")
	mustRun(t, "org", "create", "acme", "--level", "basic", "--db", db)
	addr := testenv.FreeAddr(t)
	startServe(t, "--store", store, "--s3-endpoint", m.URL(), "--listen", addr, "--db", db, "--refresh", "0", "--rate-ip", "0", "--rate-key", "0", "--log-level", "error")
	wharf := "http://" + addr

	var man publish.Manifest
	_, body := hget(t, "GET", wharf+"/releases.json")
	if err := json.Unmarshal(body, &man); err != nil || len(man.Releases) != 2 {
		t.Fatalf("releases.json: %v, %d releases", err, len(man.Releases))
	}
	keys := []string{publish.KeyLatest, publish.KeyPreview, publish.KeyPublicKey, publish.KeyInstall, publish.KeyManifest, publish.KeyIndex, publish.KeyRedirects}
	for _, r := range man.Releases {
		keys = append(keys, "bin/"+r.Version+"/SHA256SUMS", "img/"+r.Version+"/SHA256SUMS", "bin/"+r.Version+"/SHA256SUMS.sig")
		for _, a := range r.Artifacts {
			keys = append(keys, a.Key, a.Key+".sig")
		}
	}
	base := m.URL() + "/" + bucket + "/dl/"
	opened, closed := 0, 0
	for _, k := range keys {
		resp, _ := hget(t, "GET", base+k)
		if resp.StatusCode == http.StatusNotFound {
			continue // preview: not published
		}
		ref, _ := hget(t, "GET", wharf+"/"+k)
		switch {
		case resp.StatusCode == 200 && (ref.StatusCode == http.StatusUnauthorized || ref.StatusCode == http.StatusForbidden):
			t.Errorf("anonymous GET %s: MinIO 200, wharf serve %d", k, ref.StatusCode)
		case resp.StatusCode == 200:
			opened++
			if want := publish.CacheControl(k, publish.AccessPublic); strings.HasPrefix(k, "bin/") && !strings.HasSuffix(k, "SUMS") && !strings.HasSuffix(k, ".sig") && resp.Header.Get("Cache-Control") != want {
				t.Errorf("%s: Cache-Control %q, want %q", k, resp.Header.Get("Cache-Control"), want)
			}
		case resp.StatusCode == http.StatusForbidden:
			closed++
		default:
			t.Errorf("anonymous GET %s: MinIO %d, want 200 or 403", k, resp.StatusCode)
		}
	}
	// Every signature, checksum and top object, treasury-cli's 6 archives: open;
	// everything else, the connector of both releases among them: closed.
	if opened == 0 || closed == 0 {
		t.Errorf("%d objects open, %d closed", opened, closed)
	}
	for _, k := range []string{"bin/26.1.1/connector-26.1.1-linux-amd64.tar.gz", "bin/26.1.2/connector-26.1.2-linux-amd64.tar.gz", "bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz"} {
		if resp, _ := hget(t, "GET", base+k); resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous GET %s = %d, want 403", k, resp.StatusCode)
		}
	}
	if resp, _ := hget(t, "GET", base+"bin/26.1.2/treasury-cli-26.1.2-linux-amd64.tar.gz"); resp.StatusCode != 200 {
		t.Errorf("anonymous GET of a public archive = %d, want 200", resp.StatusCode)
	}
	for _, path := range []string{"?list-type=2", "?list-type=2&prefix=dl/bin/", ""} {
		if resp, _ := hget(t, "GET", m.URL()+"/"+bucket+"/"+path); resp.StatusCode != http.StatusForbidden {
			t.Errorf("anonymous listing %q = %d, want 403", path, resp.StatusCode)
		}
	}
	t.Run("Differential", func(t *testing.T) {
		s3Differential(t, m, bucket, addr, keys)
	})
}

// s3Differential is the differential suite against the bucket policy:
// seeded variants of an anonymous request for every object name ever
// published (keys, relative to the tree), spelled as the generator spells
// paths, with S3's own sub-resources in the query, sent to MinIO (under
// /BUCKET/dl) and to wharf serve over the same bucket. MinIO must never
// answer with the bytes of an object wharf refuses anonymous readers, nor
// 2xx where wharf answers 401 or 403 (rule 1; the policy is narrower
// than wharf by design, so rule 2 does not apply).
func s3Differential(t *testing.T, m *testenv.MinIO, bucket, wharf string, keys []string) {
	d := &diffTree{wharf: wharf, bySize: map[int][]*fileEntry{}}
	d.creds = make([]diffCred, 12) // the generator's credential picks: all anonymous here
	for i := range d.creds {
		d.creds[i] = diffCred{"anonymous", nil, levelAnon}
	}
	artifacts := map[string]bool{}
	for _, k := range keys {
		if strings.HasSuffix(k, ".tar") || strings.HasSuffix(k, ".tar.gz") {
			artifacts[k] = true
		}
	}
	for key, data := range m.Objects(t, bucket, "dl/") {
		key = strings.TrimPrefix(key, "dl/")
		f := &fileEntry{name: key, data: data}
		base := key[strings.LastIndexByte(key, '/')+1:]
		switch {
		case artifacts[key]:
			resp := rawDo(t, wharf, "GET /"+key+" HTTP/1.1\r\nHost: "+wharf+"\r\nConnection: close\r\n\r\n", "GET")
			f.public = resp.status == 200 && string(resp.body) == string(data)
		case !strings.Contains(key, "/"), strings.HasSuffix(key, ".sig"), base == "SHA256SUMS":
			f.public = true
		}
		f.allowed[levelAnon] = f.public
		if len(data) > 0 {
			d.files = append(d.files, f)
			d.bySize[len(data)] = append(d.bySize[len(data)], f)
		}
	}
	for _, k := range keys {
		d.paths = append(d.paths, "/"+k)
	}
	d.paths = append(d.paths, "/", "/bin/", "/bin/26.1.1/", "/img")
	n, seed := diffVariants(t), diffSeed(t)
	r := rand.New(rand.NewPCG(seed, 0x53))
	st := &diffStats{}
	var violations []string
	prefix := "/" + bucket + "/dl"
	for i := range n {
		v := d.generate(r)
		v.cred = &d.creds[0]
		v.malformed = true // rule 1 only
		if r.IntN(4) == 0 {
			sep := "?"
			if strings.Contains(v.target, "?") {
				sep = "&"
			}
			v.target += sep + pick(r, "acl", "tagging", "versionId=null", "list-type=2&prefix=dl/", "uploads", "attributes",
				"x-id=GetObject", "response-content-type=text/html", "policy", "location", "select&select-type=2", "retention", "legal-hold")
		}
		mv := v
		if rest, ok := strings.CutPrefix(v.target, "http://HOST"); ok {
			mv.target = "http://HOST" + prefix + rest
		} else {
			mv.target = prefix + v.target
		}
		w := rawDo(t, wharf, v.raw(wharf), v.method)
		p := rawDo(t, m.Endpoint, mv.raw(m.Endpoint), v.method)
		st.sent++
		for _, msg := range d.check(v, w, p, st) {
			violations = append(violations, fmt.Sprintf("variant %d (%s): %s (wharf %d; MinIO %d, %d bytes)", i, mv, msg, w.status, p.status, len(p.body)))
		}
	}
	t.Logf("MinIO: %d anonymous variants (seed %d), %d answered 2xx (%d with the bytes of a known object checked)", st.sent, seed, st.proxy2xx, st.leaksChecked)
	if st.leaksChecked == 0 {
		t.Error("the generator checked no answer's bytes")
	}
	if len(violations) > 0 {
		if len(violations) > 40 {
			violations = violations[:40]
		}
		t.Errorf("seed %d (WHARF_HOSTING_SEED=%d reruns it): violations:\n%s", seed, seed, strings.Join(violations, "\n"))
	}
}
