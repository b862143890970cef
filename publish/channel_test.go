package publish_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
	"github.com/wharfhq/wharf/publish/s3"
	"github.com/wharfhq/wharf/publish/s3/s3test"
)

var channelT0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

func sampleChannel() publish.Channel {
	return publish.Channel{
		Sequence: 12,
		Issued:   channelT0,
		Expires:  channelT0.Add(7 * 24 * time.Hour),
		URL:      "https://dl.example.com",
		Latest:   "26.1.2",
		Preview:  "26.1.3-pre.4",
		Images: []publish.ChannelImage{
			{Pointer: "latest", Name: "treasury-node", Index: "sha256:" + strings.Repeat("4f", 32)},
			{Pointer: "preview", Name: "treasury-demo", Index: "sha256:" + strings.Repeat("0a", 32)},
			{Pointer: "preview", Name: "treasury-node", Index: "sha256:" + strings.Repeat("9e", 32)},
		},
	}
}

func TestChannelRoundTrip(t *testing.T) {
	ctx := context.Background()
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(ctx)
	b, err := sampleChannel().Sign(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	want := "wharf-channel 2\nsequence 12\nissued 1795687200 2026-11-26T10:00:00Z\nexpires 1796292000 2026-12-03T10:00:00Z\nurl https://dl.example.com\nlatest 26.1.2\npreview 26.1.3-pre.4\n" +
		"image latest treasury-node sha256:" + strings.Repeat("4f", 32) + "\nimage preview treasury-demo sha256:" + strings.Repeat("0a", 32) +
		"\nimage preview treasury-node sha256:" + strings.Repeat("9e", 32) + "\nsignature "
	if !strings.HasPrefix(string(b), want) {
		t.Errorf("record =\n%s\nwant it to start with\n%s", b, want)
	}
	got, err := publish.VerifyChannel(pub, b, channelT0.Add(time.Hour))
	if err != nil || !reflect.DeepEqual(got, sampleChannel()) {
		t.Fatalf("VerifyChannel = %+v, %v; want %+v", got, err, sampleChannel())
	}
	// openssl checks the body with the signature line's base64 in the
	// channel's context, as the install script does.
	_, body, sig, _ := publish.ParseChannel(b)
	opensslVerifyMetadata(t, pubPEMOf(t, s), publish.SignedChannel, "https://dl.example.com/channel", body, sig)

	t.Run("ErrExpired", func(t *testing.T) {
		_, err := publish.VerifyChannel(pub, b, channelT0.Add(8*24*time.Hour))
		if !errors.Is(err, publish.ErrChannelExpired) {
			t.Errorf("err = %v, want ErrChannelExpired", err)
		}
	})
	t.Run("ErrOtherKey", func(t *testing.T) {
		other, _ := testSigner(t)
		opub, _ := other.PublicKey(ctx)
		if _, err := publish.VerifyChannel(opub, b, time.Time{}); !errors.Is(err, publish.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("ErrEdited", func(t *testing.T) {
		edited := bytes.Replace(b, []byte("latest 26.1.2"), []byte("latest 26.1.1"), 1)
		if _, err := publish.VerifyChannel(pub, edited, time.Time{}); !errors.Is(err, publish.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("NoVersions", func(t *testing.T) {
		c := publish.Channel{Sequence: 1, Issued: channelT0, Expires: channelT0.Add(time.Minute), URL: "http://127.0.0.1:8080"}
		b, err := c.Sign(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if got, err := publish.VerifyChannel(pub, b, channelT0); err != nil || !reflect.DeepEqual(got, c) {
			t.Errorf("VerifyChannel = %+v, %v; want %+v", got, err, c)
		}
	})
	t.Run("ErrNoExpiry", func(t *testing.T) {
		c := publish.Channel{Sequence: 1, Issued: channelT0, URL: "http://127.0.0.1:8080"}
		if b, err := c.Sign(ctx, s); !errors.Is(err, publish.ErrChannelMalformed) {
			t.Errorf("Sign = %q, %v; want ErrChannelMalformed", b, err)
		}
	})
	t.Run("ErrOtherTree", func(t *testing.T) {
		// The url line edited to the tree's own: the signature names the
		// tree it was made for.
		c := sampleChannel()
		c.URL = "https://staging.example.com"
		b, err := c.Sign(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		moved := bytes.Replace(b, []byte("url https://staging.example.com"), []byte("url https://dl.example.com"), 1)
		if _, err := publish.VerifyChannel(pub, moved, time.Time{}); !errors.Is(err, publish.ErrBadSignature) {
			t.Errorf("err = %v, want ErrBadSignature", err)
		}
	})
	t.Run("ErrSignedBare", func(t *testing.T) {
		// A format 1 record, signed bare as the release before this one
		// signed it: refused, whatever its signature.
		v1 := strings.Replace(string(sampleChannel().Body()), "wharf-channel 2", "wharf-channel 1", 1)
		sig, err := s.SignDigest(ctx, sha256Of([]byte(v1)))
		if err != nil {
			t.Fatal(err)
		}
		rec := v1 + "signature " + string(publish.SignatureText(sig)) + "\n"
		if _, err := publish.VerifyChannel(pub, []byte(rec), time.Time{}); !errors.Is(err, publish.ErrChannelMalformed) {
			t.Errorf("err = %v, want ErrChannelMalformed", err)
		}
	})
}

func TestParseChannelErrors(t *testing.T) {
	ctx := context.Background()
	s, _ := testSigner(t)
	good, _ := sampleChannel().Sign(ctx, s)
	lines := strings.SplitAfter(string(good), "\n")
	tests := []struct {
		name string
		edit func() string
	}{
		{"Empty", func() string { return "" }},
		{"CutOff", func() string { return string(good[:len(good)-5]) }},
		{"NoSignature", func() string { return strings.Join(lines[:7], "") }},
		{"OtherFormat", func() string { return "wharf-channel 3\n" + strings.Join(lines[1:], "") }},
		{"Format1", func() string { return "wharf-channel 1\n" + strings.Join(lines[1:], "") }},
		{"NoExpiry", func() string { return strings.Join(lines[:3], "") + strings.Join(lines[4:], "") }},
		{"NUL", func() string {
			return strings.Replace(string(good), "url https://dl.example.com", "url https://dl.example.com\x00", 1)
		}},
		{"Tab", func() string { return strings.Replace(string(good), "latest 26.1.2", "latest\t26.1.2", 1) }},
		{"HighByte", func() string {
			return strings.Replace(string(good), "url https://dl.example.com", "url https://dl.exämple.com", 1)
		}},
		{"SignatureNotBase64", func() string { return strings.Join(lines[:7], "") + "signature MEUC!IQ==\n" }},
		{"SignatureEmpty", func() string { return strings.Join(lines[:7], "") + "signature \n" }},
		{"TwoSequences", func() string { return lines[0] + lines[1] + strings.Join(lines[1:], "") }},
		{"Reordered", func() string { return lines[0] + lines[2] + lines[1] + strings.Join(lines[3:], "") }},
		{"UnknownLine", func() string { return strings.Join(lines[:6], "") + "mirror yes\n" + strings.Join(lines[6:], "") }},
		{"NoSequence", func() string { return lines[0] + strings.Join(lines[2:], "") }},
		{"NoURL", func() string { return strings.Join(lines[:4], "") + strings.Join(lines[5:], "") }},
		{"SequenceZero", func() string { return strings.Replace(string(good), "sequence 12", "sequence 0", 1) }},
		{"SequenceLeadingZero", func() string { return strings.Replace(string(good), "sequence 12", "sequence 012", 1) }},
		{"SequenceHuge", func() string { return strings.Replace(string(good), "sequence 12", "sequence 99999999999999999999", 1) }},
		{"TimesDisagree", func() string { return strings.Replace(string(good), "issued 1795687200", "issued 1795687201", 1) }},
		{"ExpiresBeforeIssued", func() string {
			return strings.Replace(string(good), "expires 1796292000 2026-12-03T10:00:00Z", "expires 1795687100 2026-11-26T09:58:20Z", 1)
		}},
		{"LatestIsPreview", func() string { return strings.Replace(string(good), "latest 26.1.2", "latest 26.1.3-pre.1", 1) }},
		{"PreviewIsRelease", func() string { return strings.Replace(string(good), "preview 26.1.3-pre.4", "preview 26.1.2", 1) }},
		{"CRLF", func() string { return strings.ReplaceAll(string(good), "\n", "\r\n") }},
		{"ImageBeforePreview", func() string { return strings.Join(lines[:6], "") + lines[7] + lines[6] + strings.Join(lines[8:], "") }},
		{"ImagesReordered", func() string { return strings.Join(lines[:7], "") + lines[8] + lines[7] + strings.Join(lines[9:], "") }},
		{"ImageTwice", func() string { return strings.Join(lines[:8], "") + lines[7] + strings.Join(lines[8:], "") }},
		{"ImageOfNoPointer", func() string {
			return strings.Join(lines[:5], "") + strings.Join(lines[7:8], "") + strings.Join(lines[10:], "")
		}},
		{"ImageShortDigest", func() string {
			return strings.Replace(string(good), strings.Repeat("4f", 32), strings.Repeat("4f", 31), 1)
		}},
		{"ImageUpperDigest", func() string {
			return strings.Replace(string(good), strings.Repeat("4f", 32), strings.Repeat("4F", 32), 1)
		}},
		{"ImageBadName", func() string { return strings.Replace(string(good), "latest treasury-node", "latest ../node", 1) }},
		{"ImageFourFields", func() string {
			return strings.Replace(string(good), "latest treasury-node", "latest treasury-node x", 1)
		}},
		{"TooLarge", func() string { return string(good) + strings.Repeat("x", 5000) + "\n" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, _, _, err := publish.ParseChannel([]byte(tt.edit())); !errors.Is(err, publish.ErrChannelMalformed) {
				t.Errorf("ParseChannel = %+v, %v; want ErrChannelMalformed", c, err)
			}
		})
	}
}

// TestChannelGenerated: every record Sign makes parses back to itself and
// verifies, over seeded random fields.
func TestChannelGenerated(t *testing.T) {
	ctx := context.Background()
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(ctx)
	rng := testenv.Rand(t, 1)
	for i := range 200 {
		c := publish.Channel{
			Sequence: 1 + rng.Uint64N(1e15),
			Issued:   time.Unix(1+rng.Int64N(4e9), 0).UTC(),
			URL:      fmt.Sprintf("https://dl%d.example.com/p%d", rng.IntN(100), rng.IntN(100)),
		}
		c.Expires = c.Issued.Add(time.Duration(1+rng.Int64N(1e6)) * time.Second)
		if rng.IntN(3) > 0 {
			c.Latest = fmt.Sprintf("%02d.%d.%d", rng.IntN(100), 1+rng.IntN(20), 1+rng.IntN(20))
		}
		if rng.IntN(3) > 0 {
			c.Preview = fmt.Sprintf("%02d.%d.%d-pre.%d", rng.IntN(100), 1+rng.IntN(20), 1+rng.IntN(20), 1+rng.IntN(999))
		}
		for _, p := range []string{"latest", "preview"} {
			if p == "latest" && c.Latest == "" || p == "preview" && c.Preview == "" {
				continue
			}
			for n := range rng.IntN(4) {
				d := sha256.Sum256(fmt.Appendf(nil, "%d %s %d", i, p, n))
				c.Images = append(c.Images, publish.ChannelImage{Pointer: p, Name: fmt.Sprintf("image-%d", n), Index: "sha256:" + hex.EncodeToString(d[:])})
			}
		}
		b, err := c.Sign(ctx, s)
		if err != nil {
			t.Fatalf("record %d: Sign(%+v): %v", i, c, err)
		}
		if got, err := publish.VerifyChannel(pub, b, time.Time{}); err != nil || !reflect.DeepEqual(got, c) {
			t.Fatalf("record %d: VerifyChannel = %+v, %v; want %+v\n%s", i, got, err, c, b)
		}
	}
}

func FuzzParseChannel(f *testing.F) {
	s, err := publish.NewSigner(mustKey(f))
	if err != nil {
		f.Fatal(err)
	}
	good, _ := sampleChannel().Sign(context.Background(), s)
	f.Add(good)
	f.Add([]byte("wharf-channel 2\nsequence 1\nissued 1 1970-01-01T00:00:01Z\nexpires 2 1970-01-01T00:00:02Z\nurl x\nsignature AA==\n"))
	f.Add([]byte("wharf-channel 1\nsequence 1\nissued 1 1970-01-01T00:00:01Z\nurl x\nsignature AA==\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, body, sig, err := publish.ParseChannel(b)
		if err != nil {
			return
		}
		// What parses is what Body writes back, plus its signature line.
		if !bytes.Equal(c.Body(), body) || !bytes.Equal(b, append(append(body, "signature "...), append(sig, '\n')...)) {
			t.Fatalf("ParseChannel(%q) = %+v, which writes back as %q", b, c, c.Body())
		}
	})
}

func mustKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	priv, _, err := publish.GenerateKey()
	if err != nil {
		tb.Fatal(err)
	}
	k, err := publish.ParsePrivateKeyPEM(priv)
	if err != nil {
		tb.Fatal(err)
	}
	return k
}

func openDir(t *testing.T) (publish.Store, string) {
	t.Helper()
	root := t.TempDir()
	st, err := dir.New(root)
	if err != nil {
		t.Fatal(err)
	}
	return st, root
}

// TestChannelUpdate: the record follows the pointers forward only, its
// sequence grows with every write, and a run with nothing new writes
// nothing.
func TestChannelUpdate(t *testing.T) {
	ctx := context.Background()
	st, root := openDir(t)
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(ctx)
	clock := testenv.NewClock(channelT0)
	u := &publish.ChannelUpdate{Store: st, Signer: s, URL: "https://dl.example.com", Now: clock.Now}
	setPointer := func(key, v string) {
		if err := os.WriteFile(root+"/"+key, []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func() publish.Channel {
		b, err := os.ReadFile(root + "/" + publish.KeyChannel)
		if err != nil {
			t.Fatal(err)
		}
		c, err := publish.VerifyChannel(pub, b, clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	steps := []struct {
		name            string
		latest, preview string // pointer contents before the run ("" unchanged)
		force           bool
		expiry          time.Duration
		wrote           bool
		want            publish.Channel
	}{
		// With nothing said, a record is valid for DefaultChannelExpiry.
		{"First", "26.1.1", "", false, 0, true, publish.Channel{Sequence: 1, Latest: "26.1.1"}},
		{"Nothing new", "", "", false, 0, false, publish.Channel{Sequence: 1, Latest: "26.1.1"}},
		{"Preview", "", "26.1.2-pre.3", false, 0, true, publish.Channel{Sequence: 2, Latest: "26.1.1", Preview: "26.1.2-pre.3"}},
		{"PointerBackwards", "26.1.0-pre.1", "", false, 0, false, publish.Channel{Sequence: 2, Latest: "26.1.1", Preview: "26.1.2-pre.3"}},
		{"Release", "26.1.2", "", false, 0, true, publish.Channel{Sequence: 3, Latest: "26.1.2", Preview: "26.1.2-pre.3"}},
		{"Expiry", "", "", false, time.Hour, true, publish.Channel{Sequence: 4, Latest: "26.1.2", Preview: "26.1.2-pre.3"}},
		{"ExpiryStillLong", "", "", false, time.Hour, false, publish.Channel{Sequence: 4, Latest: "26.1.2", Preview: "26.1.2-pre.3"}},
		{"Resign", "", "", true, 2 * time.Hour, true, publish.Channel{Sequence: 5, Latest: "26.1.2", Preview: "26.1.2-pre.3"}},
		// A publish without an expiry keeps the record's 2 h.
		{"KeepExpiry", "26.1.3", "", false, 0, true, publish.Channel{Sequence: 6, Latest: "26.1.3", Preview: "26.1.2-pre.3"}},
	}
	for _, st := range steps {
		if st.latest != "" {
			setPointer(publish.KeyLatest, st.latest)
		}
		if st.preview != "" {
			setPointer(publish.KeyPreview, st.preview)
		}
		clock.Advance(time.Minute)
		u.Force, u.Expiry, u.KeepExpiry = st.force, st.expiry, st.name == "KeepExpiry"
		_, wrote, err := u.Run(ctx)
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		got := read()
		if wrote != st.wrote || got.Sequence != st.want.Sequence || got.Latest != st.want.Latest || got.Preview != st.want.Preview {
			t.Errorf("%s: wrote %v, record %+v; want wrote %v, %+v", st.name, wrote, got, st.wrote, st.want)
		}
		if wrote && st.expiry > 0 && !got.Expires.Equal(clock.Now().Truncate(time.Second).Add(st.expiry)) {
			t.Errorf("%s: expires %v, want now + %v", st.name, got.Expires, st.expiry)
		}
		if st.name == "First" && !got.Expires.Equal(clock.Now().Truncate(time.Second).Add(publish.DefaultChannelExpiry)) {
			t.Errorf("%s: expires %v, want now + %v", st.name, got.Expires, publish.DefaultChannelExpiry)
		}
		if st.name == "KeepExpiry" && !got.Expires.Equal(clock.Now().Truncate(time.Second).Add(2*time.Hour)) {
			t.Errorf("%s: expires %v, want now + 2h kept from the record before", st.name, got.Expires)
		}
	}
}

// TestChannelUpdateConcurrent: writers racing on one directory store lose
// no write: every one of them ends on top of another, so the sequence
// counts them all, and the record names the newest pointer.
func TestChannelUpdateConcurrent(t *testing.T) {
	t.Run("Dir", func(t *testing.T) {
		st, _ := openDir(t)
		channelRace(t, st)
	})
	t.Run("MinIO", func(t *testing.T) {
		m := testenv.SharedMinIO(t)
		channelRace(t, s3test.Store(t, m, "chan", s3.Options{}))
	})
}

func channelRace(t *testing.T, st publish.Store) {
	ctx := context.Background()
	s, _ := testSigner(t)
	pub, _ := s.PublicKey(ctx)
	if _, err := st.Put(ctx, publish.KeyLatest, strings.NewReader("26.1.5\n"), 7, publish.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			u := &publish.ChannelUpdate{Store: st, Signer: s, URL: "https://dl.example.com", Now: time.Now, Force: true}
			if _, _, err := u.Run(ctx); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	o, err := st.Open(ctx, publish.KeyChannel)
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	b, _ := io.ReadAll(o)
	c, err := publish.VerifyChannel(pub, b, time.Time{})
	if err != nil || c.Sequence != n || c.Latest != "26.1.5" {
		t.Errorf("record %+v, %v; want sequence %d naming 26.1.5", c, err, n)
	}
}

// TestChannelImages: the record publish writes names the image index of
// every image of the releases latest and preview name, as releases.json
// lists them, under the key; publishing a new release writes it again
// with that release's.
func TestChannelImages(t *testing.T) {
	root := t.TempDir()
	s := dirStore(t, root)
	p := newPublisher(t, s, fixedSigner(t))
	pub, err := fixedSigner(t).PublicKey(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check := func(latest, preview string) {
		t.Helper()
		c, err := publish.VerifyChannel(pub, readKey(t, s, publish.KeyChannel), time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		m := readManifest(t, root)
		var want []publish.ChannelImage
		for _, ptr := range []struct{ name, version string }{{"latest", latest}, {"preview", preview}} {
			if ptr.version == "" {
				continue
			}
			rel, _ := m.Find(ptr.version)
			var ims []publish.ChannelImage
			for _, im := range rel.Images {
				ims = append(ims, publish.ChannelImage{Pointer: ptr.name, Name: im.Name, Index: im.Index})
			}
			slices.SortFunc(ims, func(a, b publish.ChannelImage) int { return strings.Compare(a.Name, b.Name) })
			want = append(want, ims...)
		}
		if len(want) == 0 {
			t.Fatal("releases.json lists no images")
		}
		if !reflect.DeepEqual(c.Images, want) {
			t.Errorf("record images = %+v, want %+v", c.Images, want)
		}
	}
	mustPublish(t, p, "26.1.1", "one")
	check("26.1.1", "")
	mustPublish(t, p, "26.1.2-pre.1", "two")
	check("26.1.1", "26.1.2-pre.1")
	mustPublish(t, p, "26.1.2", "three")
	check("26.1.2", "26.1.2-pre.1")
}
