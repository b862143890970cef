// Package storetest is a conformance suite for publish.Store
// implementations: every store runs Run against a fresh, empty store and
// so behaves the same for the publisher and the download server.
package storetest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// LargeSize is the size of the objects of the large-object tests: big
// enough that a store with 5 MiB parts uploads them in several parts.
const LargeSize = 11<<20 + 12345

// Run runs the suite. open returns a new, empty store for each subtest.
func Run(t *testing.T, open func(t *testing.T) publish.Store) {
	tests := []struct {
		name string
		f    func(t *testing.T, s publish.Store)
	}{
		{"PutOpenStat", testPutOpenStat},
		{"PutEmpty", testPutEmpty},
		{"PutUnknownSize", testPutUnknownSize},
		{"PutShortReader", testPutShortReader},
		{"Overwrite", testOverwrite},
		{"OpenedVersion", testOpenedVersion},
		{"Large", testLarge},
		{"Seek", testSeek},
		{"List", testList},
		{"ErrNotFound", testNotFound},
		{"ErrInvalidKey", testInvalidKey},
		{"IfNoneMatch", testIfNoneMatch},
		{"IfMatch", testIfMatch},
		{"CASRace", testCASRace},
		{"CreateRace", testCreateRace},
		{"SHA256", testSHA256},
		{"SHA256Mismatch", testSHA256Mismatch},
		{"HashingReader", testHashingReader},
		{"Atomic", testAtomic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.f(t, open(t)) })
	}
}

func put(t *testing.T, s publish.Store, key string, data []byte, opts publish.PutOptions) publish.ObjectInfo {
	t.Helper()
	info, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(len(data)), opts)
	if err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(data), err)
	}
	return info
}

func read(t *testing.T, s publish.Store, key string) ([]byte, publish.ObjectInfo) {
	t.Helper()
	obj, err := s.Open(t.Context(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer obj.Close()
	b, err := io.ReadAll(obj)
	if err != nil {
		t.Fatalf("read %q: %v", key, err)
	}
	return b, obj.Info()
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// checkSHA256 accepts an empty SHA256 (the store keeps none) but not a wrong one.
func checkSHA256(t *testing.T, what string, info publish.ObjectInfo, data []byte) {
	t.Helper()
	if info.SHA256 != "" && info.SHA256 != sum(data) {
		t.Errorf("%s: SHA256 = %s, want %s (or empty)", what, info.SHA256, sum(data))
	}
}

// pattern is deterministic content that differs per seed and per offset,
// so a mix of two versions or a shifted read shows: byte i is
// seed ^ byte(i) ^ byte(i>>8) ^ byte(i>>16).
func pattern(seed byte, n int) []byte {
	const block = 1 << 16
	var base [block]byte // byte(i) ^ byte(i>>8) over one block
	for i := range base {
		base[i] = byte(i) ^ byte(i>>8)
	}
	b := make([]byte, n)
	// Block k is base XOR (seed ^ byte(k)); XORBytes keeps this fast (and
	// cheap under -race) for the large objects.
	for k := 0; k*block < n; k++ {
		end := min(n, (k+1)*block)
		c := bytes.Repeat([]byte{seed ^ byte(k)}, end-k*block)
		subtle.XORBytes(b[k*block:end], base[:end-k*block], c)
	}
	return b
}

func testPutOpenStat(t *testing.T, s publish.Store) {
	data := []byte("hello, wharf\n")
	info := put(t, s, "bin/26.1.1/a.txt", data, publish.PutOptions{ContentType: "text/plain"})
	if info.Key != "bin/26.1.1/a.txt" || info.Size != int64(len(data)) || info.ETag == "" {
		t.Errorf("Put info = %+v, want key, size %d and an ETag", info, len(data))
	}
	checkSHA256(t, "Put", info, data)

	st, err := s.Stat(t.Context(), "bin/26.1.1/a.txt")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if st.Size != int64(len(data)) || st.ETag != info.ETag || st.ModTime.IsZero() {
		t.Errorf("Stat = %+v, want size %d, ETag %s, a ModTime", st, len(data), info.ETag)
	}
	checkSHA256(t, "Stat", st, data)

	got, oi := read(t, s, "bin/26.1.1/a.txt")
	if !bytes.Equal(got, data) {
		t.Errorf("read %q, want %q", got, data)
	}
	if oi.Size != st.Size || oi.ETag != st.ETag || oi.Key != "bin/26.1.1/a.txt" {
		t.Errorf("Open Info = %+v, want %+v", oi, st)
	}
}

func testPutEmpty(t *testing.T, s publish.Store) {
	put(t, s, "empty", nil, publish.PutOptions{})
	got, info := read(t, s, "empty")
	if len(got) != 0 || info.Size != 0 {
		t.Errorf("read %d bytes, Size %d, want 0", len(got), info.Size)
	}
	checkSHA256(t, "empty", info, nil)
}

func testPutUnknownSize(t *testing.T, s publish.Store) {
	for _, n := range []int{0, 1000, LargeSize} {
		key := "unknown/" + strconv.Itoa(n)
		data := pattern(7, n)
		// A reader that is neither a Seeker nor has a Len.
		info, err := s.Put(t.Context(), key, io.MultiReader(bytes.NewReader(data)), -1, publish.PutOptions{})
		if err != nil {
			t.Fatalf("Put(%s, size -1): %v", key, err)
		}
		if info.Size != int64(n) {
			t.Errorf("Put(%s).Size = %d, want %d", key, info.Size, n)
		}
		checkSHA256(t, key, info, data)
		if got, _ := read(t, s, key); !bytes.Equal(got, data) {
			t.Errorf("read %s: %d bytes differ from the %d written", key, len(got), n)
		}
	}
}

func testPutShortReader(t *testing.T, s publish.Store) {
	for _, n := range []int{10, LargeSize} {
		key := "short/" + strconv.Itoa(n)
		data := pattern(3, n)
		_, err := s.Put(t.Context(), key, bytes.NewReader(data[:n-1]), int64(n), publish.PutOptions{})
		if err == nil {
			t.Fatalf("Put(%s) with one byte missing succeeded", key)
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Stat(%s) after a short Put = %v, want ErrNotFound", key, err)
		}
	}
}

func testOverwrite(t *testing.T, s publish.Store) {
	a := put(t, s, "k", []byte("one"), publish.PutOptions{})
	b := put(t, s, "k", []byte("two!"), publish.PutOptions{})
	if a.ETag == b.ETag {
		t.Errorf("ETag did not change on overwrite: %s", a.ETag)
	}
	if got, info := read(t, s, "k"); string(got) != "two!" || info.ETag != b.ETag {
		t.Errorf("read %q ETag %s, want %q ETag %s", got, info.ETag, "two!", b.ETag)
	}
}

// testOpenedVersion: an open object reads the version it was opened at,
// whole, even when the key is overwritten before the read; Info describes
// that version.
func testOpenedVersion(t *testing.T, s publish.Store) {
	old := put(t, s, "pointer", []byte("26.1.1\n"), publish.PutOptions{})
	obj, err := s.Open(t.Context(), "pointer")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	put(t, s, "pointer", []byte("26.1.22\n"), publish.PutOptions{})
	got, err := io.ReadAll(obj)
	if err != nil || string(got) != "26.1.1\n" || obj.Info().ETag != old.ETag {
		t.Errorf("read %q, %v, ETag %s after an overwrite; want %q, ETag %s", got, err, obj.Info().ETag, "26.1.1\n", old.ETag)
	}
}

func testLarge(t *testing.T, s publish.Store) {
	data := pattern(42, LargeSize)
	info := put(t, s, "img/26.1.1/big.tar", data, publish.PutOptions{})
	if info.Size != LargeSize {
		t.Errorf("Size = %d, want %d", info.Size, LargeSize)
	}
	checkSHA256(t, "Put", info, data)
	got, oi := read(t, s, "img/26.1.1/big.tar")
	if !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes that differ from the %d written", len(got), len(data))
	}
	if oi.ETag != info.ETag {
		t.Errorf("Open ETag %s, Put ETag %s", oi.ETag, info.ETag)
	}
}

func testSeek(t *testing.T, s publish.Store) {
	data := pattern(9, 1<<20)
	put(t, s, "seek", data, publish.PutOptions{})
	obj, err := s.Open(t.Context(), "seek")
	if err != nil {
		t.Fatal(err)
	}
	defer obj.Close()
	tests := []struct {
		offset int64
		whence int
		pos    int64
		n      int
	}{
		{1000, io.SeekStart, 1000, 100},
		{-10, io.SeekEnd, int64(len(data)) - 10, 10},
		{0, io.SeekStart, 0, 5},
		{500, io.SeekCurrent, 505, 64 << 10},
		{int64(len(data)) - 3, io.SeekStart, int64(len(data)) - 3, 3},
	}
	for _, tt := range tests {
		pos, err := obj.Seek(tt.offset, tt.whence)
		if err != nil || pos != tt.pos {
			t.Fatalf("Seek(%d, %d) = %d, %v, want %d", tt.offset, tt.whence, pos, err, tt.pos)
		}
		buf := make([]byte, tt.n)
		if _, err := io.ReadFull(obj, buf); err != nil {
			t.Fatalf("read %d at %d: %v", tt.n, pos, err)
		}
		if !bytes.Equal(buf, data[pos:pos+int64(tt.n)]) {
			t.Errorf("read %d at %d: wrong bytes", tt.n, pos)
		}
	}
	// Seek to the end reads EOF; http.ServeContent relies on this to find the size.
	if end, err := obj.Seek(0, io.SeekEnd); err != nil || end != int64(len(data)) {
		t.Fatalf("Seek(0, End) = %d, %v, want %d", end, err, len(data))
	}
	if n, err := obj.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("Read at end = %d, %v, want 0, EOF", n, err)
	}
}

func testList(t *testing.T, s publish.Store) {
	keys := []string{"latest", "bin/26.1.2/b.tar.gz", "bin/26.1.1/a.tar.gz", "bin/26.1.1/a.tar.gz.sig", "img/26.1.1/x.tar", "binary"}
	for i, k := range keys {
		put(t, s, k, []byte(strings.Repeat("x", i+1)), publish.PutOptions{})
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/a.tar.gz.sig", "bin/26.1.2/b.tar.gz", "binary", "img/26.1.1/x.tar", "latest"}},
		{"bin/", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/a.tar.gz.sig", "bin/26.1.2/b.tar.gz"}},
		{"bin/26.1.1/a.tar.gz", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/a.tar.gz.sig"}},
		{"nothing/", nil},
	}
	for _, tt := range tests {
		got, err := s.List(t.Context(), tt.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tt.prefix, err)
		}
		var names []string
		for _, o := range got {
			names = append(names, o.Key)
			if want := int64(slices.Index(keys, o.Key) + 1); o.Size != want {
				t.Errorf("List(%q): %s has size %d, want %d", tt.prefix, o.Key, o.Size, want)
			}
			if o.ETag == "" {
				t.Errorf("List(%q): %s has no ETag", tt.prefix, o.Key)
			}
		}
		if !slices.Equal(names, tt.want) {
			t.Errorf("List(%q) = %q, want %q", tt.prefix, names, tt.want)
		}
	}
}

func testNotFound(t *testing.T, s publish.Store) {
	put(t, s, "dir/present", []byte("x"), publish.PutOptions{})
	for _, key := range []string{"absent", "dir/absent", "dir", "dir/present/child"} {
		if _, err := s.Open(t.Context(), key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Open(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
		}
	}
}

func testInvalidKey(t *testing.T, s publish.Store) {
	for _, key := range []string{"", "..", "../x", "a/../b", "a/..", ".", "./a", "a\x00b", `a\b`, `..\x`, "/abs", "a//b", "a/", "a\nb"} {
		if _, err := s.Open(t.Context(), key); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Open(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Put(t.Context(), key, strings.NewReader("x"), 1, publish.PutOptions{}); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if all, err := s.List(t.Context(), ""); err != nil || len(all) != 0 {
		t.Errorf("after refused Puts, List = %v, %v, want nothing", all, err)
	}
}

func testIfNoneMatch(t *testing.T, s publish.Store) {
	put(t, s, "once", []byte("first"), publish.PutOptions{IfNoneMatch: true})
	_, err := s.Put(t.Context(), "once", strings.NewReader("second"), 6, publish.PutOptions{IfNoneMatch: true})
	if !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Fatalf("second Put IfNoneMatch = %v, want ErrPreconditionFailed", err)
	}
	if got, _ := read(t, s, "once"); string(got) != "first" {
		t.Errorf("content %q after a refused Put, want %q", got, "first")
	}
	// Large objects take the same path through a multipart upload on S3.
	big := pattern(1, LargeSize)
	_, err = s.Put(t.Context(), "once", bytes.NewReader(big), int64(len(big)), publish.PutOptions{IfNoneMatch: true})
	if !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Fatalf("large Put IfNoneMatch = %v, want ErrPreconditionFailed", err)
	}
	if got, _ := read(t, s, "once"); string(got) != "first" {
		t.Errorf("content %.10q after a refused large Put, want %q", got, "first")
	}
}

func testIfMatch(t *testing.T, s publish.Store) {
	v1 := put(t, s, "ptr", []byte("26.1.1\n"), publish.PutOptions{})
	v2 := put(t, s, "ptr", []byte("26.1.2\n"), publish.PutOptions{IfMatch: v1.ETag})
	if _, err := s.Put(t.Context(), "ptr", strings.NewReader("26.1.0\n"), 7, publish.PutOptions{IfMatch: v1.ETag}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Fatalf("Put with stale IfMatch = %v, want ErrPreconditionFailed", err)
	}
	big := pattern(2, LargeSize)
	if _, err := s.Put(t.Context(), "ptr", bytes.NewReader(big), int64(len(big)), publish.PutOptions{IfMatch: v1.ETag}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Fatalf("large Put with stale IfMatch = %v, want ErrPreconditionFailed", err)
	}
	if got, info := read(t, s, "ptr"); string(got) != "26.1.2\n" || info.ETag != v2.ETag {
		t.Errorf("content %q ETag %s, want %q ETag %s", got, info.ETag, "26.1.2\n", v2.ETag)
	}
	if _, err := s.Put(t.Context(), "absent", strings.NewReader("x"), 1, publish.PutOptions{IfMatch: v2.ETag}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Errorf("Put IfMatch on a missing object = %v, want ErrPreconditionFailed", err)
	}
	if _, err := s.Stat(t.Context(), "absent"); !errors.Is(err, publish.ErrNotFound) {
		t.Errorf("Stat after a refused Put = %v, want ErrNotFound", err)
	}
}

// testCASRace runs read-modify-write increments from several goroutines;
// with IfMatch no increment may be lost.
func testCASRace(t *testing.T, s publish.Store) {
	const workers, each = 4, 5
	put(t, s, "counter", []byte("0"), publish.PutOptions{IfNoneMatch: true})
	incr := func(ctx context.Context) error {
		for {
			obj, err := s.Open(ctx, "counter")
			if err != nil {
				return err
			}
			b, err := io.ReadAll(obj)
			info := obj.Info()
			obj.Close()
			if errors.Is(err, publish.ErrPreconditionFailed) {
				continue // overwritten while reading
			}
			if err != nil {
				return err
			}
			n, err := strconv.Atoi(string(b))
			if err != nil {
				return fmt.Errorf("counter %q: %w", b, err)
			}
			next := strconv.Itoa(n + 1)
			_, err = s.Put(ctx, "counter", strings.NewReader(next), int64(len(next)), publish.PutOptions{IfMatch: info.ETag})
			if errors.Is(err, publish.ErrPreconditionFailed) {
				continue
			}
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, workers*each)
	for range workers {
		wg.Go(func() {
			for range each {
				if err := incr(t.Context()); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("increment: %v", err)
	}
	if got, _ := read(t, s, "counter"); string(got) != strconv.Itoa(workers*each) {
		t.Errorf("counter = %s after %d increments", got, workers*each)
	}
}

// testCreateRace: several writers create the same key with IfNoneMatch at
// once, small objects and large ones (multipart on S3, where the condition
// is checked again at completion): exactly one wins, and its bytes are what
// is stored.
func testCreateRace(t *testing.T, s publish.Store) {
	const writers = 3
	for _, n := range []int{100, LargeSize} {
		key := "created/" + strconv.Itoa(n)
		var wg sync.WaitGroup
		results := make([]error, writers)
		for i := range writers {
			wg.Go(func() {
				data := pattern(byte(10+i), n)
				_, results[i] = s.Put(t.Context(), key, bytes.NewReader(data), int64(n), publish.PutOptions{IfNoneMatch: true})
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range results {
			switch {
			case err == nil && winner >= 0:
				t.Errorf("%s: writers %d and %d both created it", key, winner, i)
			case err == nil:
				winner = i
			case !errors.Is(err, publish.ErrPreconditionFailed):
				t.Errorf("%s: writer %d: %v, want ErrPreconditionFailed", key, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("%s: no writer created it", key)
		}
		if got, _ := read(t, s, key); !bytes.Equal(got, pattern(byte(10+winner), n)) {
			t.Errorf("%s: stored bytes are not the winner's", key)
		}
	}
}

func testSHA256(t *testing.T, s publish.Store) {
	for _, n := range []int{100, LargeSize} {
		data := pattern(5, n)
		want := sha256.Sum256(data)
		key := "sum/" + strconv.Itoa(n)
		info := put(t, s, key, data, publish.PutOptions{SHA256: want[:]})
		checkSHA256(t, "Put", info, data)
		st, err := s.Stat(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		checkSHA256(t, "Stat", st, data)
	}
}

func testSHA256Mismatch(t *testing.T, s publish.Store) {
	for _, n := range []int{100, LargeSize} {
		data := pattern(6, n)
		wrong := sha256.Sum256(append([]byte("not "), data...))
		key := "bad/" + strconv.Itoa(n)
		if _, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(n), publish.PutOptions{SHA256: wrong[:]}); !errors.Is(err, publish.ErrChecksumMismatch) {
			t.Fatalf("Put(%s) with a wrong SHA256 = %v, want ErrChecksumMismatch", key, err)
		}
		if _, err := s.Stat(t.Context(), key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Stat(%s) after a refused Put = %v, want ErrNotFound", key, err)
		}
		// An existing object stays as it was.
		put(t, s, key, []byte("old"), publish.PutOptions{})
		if _, err := s.Put(t.Context(), key, bytes.NewReader(data), int64(n), publish.PutOptions{SHA256: wrong[:]}); !errors.Is(err, publish.ErrChecksumMismatch) {
			t.Fatalf("overwrite of %s with a wrong SHA256 = %v, want ErrChecksumMismatch", key, err)
		}
		if got, _ := read(t, s, key); string(got) != "old" {
			t.Errorf("%s = %.10q after a refused overwrite, want %q", key, got, "old")
		}
	}
	if all, err := s.List(t.Context(), "bad/"); err != nil || len(all) != 2 {
		t.Errorf("List(bad/) = %v, %v, want the two old objects", all, err)
	}
}

// digestCounter is a publish.HashingReader that counts the digests taken.
type digestCounter struct {
	publish.HashingReader
	taken int
}

func (d *digestCounter) SHA256() []byte {
	d.taken++
	return d.HashingReader.SHA256()
}

// testHashingReader: a Put handed a publish.HashingReader, of known or
// unknown size, in one part or several, stores exactly the bytes read,
// and if it reports a SHA-256, took it from the reader (the bytes are
// hashed once).
func testHashingReader(t *testing.T, s publish.Store) {
	for _, n := range []int{100, LargeSize} {
		for _, size := range []int64{int64(n), -1} {
			data := pattern(7, n)
			key := fmt.Sprintf("hashed/%d/%d", n, size)
			r := &digestCounter{HashingReader: publish.Hashing(bytes.NewReader(data))}
			info, err := s.Put(t.Context(), key, r, size, publish.PutOptions{})
			if err != nil {
				t.Fatalf("Put(%s): %v", key, err)
			}
			if info.SHA256 != "" && r.taken == 0 {
				t.Errorf("Put(%s) reports a SHA-256 but did not take the reader's digest", key)
			}
			checkSHA256(t, "Put "+key, info, data)
			if got, _ := read(t, s, key); !bytes.Equal(got, data) {
				t.Errorf("%s: read back %d bytes that differ from the %d written", key, len(got), n)
			}
		}
	}
}

var errPartial = errors.New("partial or mixed object")

// testAtomic overwrites a large object while readers read it: every read
// either fails or returns one whole version, never a mix or a prefix.
func testAtomic(t *testing.T, s publish.Store) {
	const versions = 4
	put(t, s, "atomic", pattern(0, LargeSize), publish.PutOptions{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reads, failed int
	check := func(ctx context.Context) error {
		obj, err := s.Open(ctx, "atomic")
		if err != nil {
			return err
		}
		defer obj.Close()
		b, err := io.ReadAll(obj)
		if err != nil {
			return err
		}
		if int64(len(b)) != obj.Info().Size || len(b) < 1 {
			return fmt.Errorf("%w: read %d bytes of an object of %d", errPartial, len(b), obj.Info().Size)
		}
		seed := b[0] // pattern(seed, n)[0] == seed
		if !bytes.Equal(b, pattern(seed, len(b))) {
			return fmt.Errorf("%w: read %d bytes that are no whole version (first byte %d)", errPartial, len(b), seed)
		}
		return nil
	}
	for range 2 {
		wg.Go(func() {
			for ctx.Err() == nil {
				err := check(ctx)
				mu.Lock()
				reads++
				switch {
				case errors.Is(err, errPartial):
					t.Errorf("reader: %v", err)
				case err != nil:
					// A read may fail when the object changes under it
					// (S3 pins reads to the ETag); it must not return a mix.
					failed++
				}
				mu.Unlock()
			}
		})
	}
	for v := 1; v <= versions; v++ {
		// Sizes differ per version so a length mix-up shows too.
		put(t, s, "atomic", pattern(byte(v), LargeSize-v*1000), publish.PutOptions{})
	}
	cancel()
	wg.Wait()
	t.Logf("%d reads during %d overwrites, %d stopped by a concurrent overwrite", reads, versions, failed)
	if err := check(t.Context()); err != nil {
		t.Errorf("final read: %v", err)
	}
}
