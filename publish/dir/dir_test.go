package dir_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/wharfhq/wharf/publish"
	"github.com/wharfhq/wharf/publish/dir"
)

func newStore(t *testing.T) (*dir.Store, string) {
	t.Helper()
	root := t.TempDir()
	s, err := dir.New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, root
}

func put(t *testing.T, s publish.Store, key, body string, opts publish.PutOptions) publish.ObjectInfo {
	t.Helper()
	in, err := s.Put(context.Background(), key, strings.NewReader(body), int64(len(body)), opts)
	if err != nil {
		t.Fatalf("Put(%q): %v", key, err)
	}
	return in
}

func read(t *testing.T, s publish.Store, key string) string {
	t.Helper()
	o, err := s.Open(context.Background(), key)
	if err != nil {
		t.Fatalf("Open(%q): %v", key, err)
	}
	defer o.Close()
	b, err := io.ReadAll(o)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// files lists every file under root, the store's own files included, so
// tests can prove nothing was left behind.
func files(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() && fi.Name() != ".wharf.lock" {
			rel, _ := filepath.Rel(root, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	return out
}

func TestPutOpen(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	body := "hello, wharf\n"
	sum := sha256.Sum256([]byte(body))
	in := put(t, s, "bin/26.1.1/SHA256SUMS", body, publish.PutOptions{SHA256: sum[:]})
	if in.Key != "bin/26.1.1/SHA256SUMS" || in.Size != int64(len(body)) || in.ETag == "" {
		t.Errorf("Put info = %+v", in)
	}
	if want := hex.EncodeToString(sum[:]); in.SHA256 != want {
		t.Errorf("Put SHA256 = %q, want %s: the digest of the bytes written, so the writer need not read them back", in.SHA256, want)
	}
	if b, err := os.ReadFile(filepath.Join(root, "bin", "26.1.1", "SHA256SUMS")); err != nil || string(b) != body {
		t.Fatalf("file on disk = %q, %v", b, err)
	}

	o, err := s.Open(ctx, "bin/26.1.1/SHA256SUMS")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	if got := o.Info(); got.ETag != in.ETag || got.Size != in.Size {
		t.Errorf("Open info = %+v, Put info = %+v", got, in)
	}
	if _, ok := o.(interface{ Fd() uintptr }); !ok {
		t.Errorf("Open returned %T, want an *os.File-backed object", o)
	}
	if _, err := o.Seek(7, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(o)
	if string(rest) != "wharf\n" {
		t.Errorf("after Seek(7) read %q", rest)
	}

	st, err := s.Stat(ctx, "bin/26.1.1/SHA256SUMS")
	if err != nil || st.ETag != in.ETag || st.SHA256 != "" {
		t.Errorf("Stat = %+v, %v", st, err)
	}
	if got := files(t, root); len(got) != 1 {
		t.Errorf("files after Put = %q, want only the object", got)
	}
}

func TestNotFound(t *testing.T) {
	s, _ := newStore(t)
	put(t, s, "bin/26.1.1/a", "a", publish.PutOptions{})
	ctx := context.Background()
	for _, key := range []string{"latest", "bin", "bin/26.1.1", "bin/26.1.1/a/b"} {
		if _, err := s.Open(ctx, key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Open(%q) = %v, want ErrNotFound", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, publish.ErrNotFound) {
			t.Errorf("Stat(%q) = %v, want ErrNotFound", key, err)
		}
	}
}

func TestInvalidKey(t *testing.T) {
	s, root := newStore(t)
	ctx := context.Background()
	for _, key := range []string{"", "/etc/passwd", "..", "../x", "a/../../x", "a//b", "./a", "a/.", `a\b`, "a\x00b", ".wharf.lock", "bin/.wharf-tmp-1-x"} {
		if _, err := s.Open(ctx, key); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Open(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Stat(ctx, key); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey", key, err)
		}
		if _, err := s.Put(ctx, key, strings.NewReader("x"), 1, publish.PutOptions{}); !errors.Is(err, publish.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey", key, err)
		}
	}
	if got := files(t, root); len(got) != 0 {
		t.Errorf("files after refused writes = %q", got)
	}
}

func TestSymlinkOutsideRoot(t *testing.T) {
	s, root := newStore(t)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(root, "leak")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(root, "out")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if o, err := s.Open(ctx, "leak"); err == nil {
		b, _ := io.ReadAll(o)
		o.Close()
		t.Fatalf("Open(leak) through a symlink out of the root read %q", b)
	}
	if o, err := s.Open(ctx, "out/secret"); err == nil {
		o.Close()
		t.Fatal("Open(out/secret) followed a symlinked directory out of the root")
	}
	if _, err := s.Put(ctx, "out/new", strings.NewReader("x"), 1, publish.PutOptions{}); err == nil {
		t.Fatal("Put(out/new) wrote through a symlinked directory")
	}
	if _, err := os.Stat(filepath.Join(outside, "new")); err == nil {
		t.Fatal("a file appeared outside the root")
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 0 {
		t.Errorf("List listed symlinks: %+v", list)
	}
}

func TestPutRefused(t *testing.T) {
	sum := sha256.Sum256([]byte("other"))
	tests := []struct {
		name string
		r    io.Reader
		size int64
		opts publish.PutOptions
		is   error
	}{
		{"ErrChecksumMismatch", strings.NewReader("content"), 7, publish.PutOptions{SHA256: sum[:]}, publish.ErrChecksumMismatch},
		{"ShortBody", strings.NewReader("content"), 8, publish.PutOptions{}, nil},
		{"LongBody", strings.NewReader("content"), 6, publish.PutOptions{}, nil},
		{"ReaderFails", io.MultiReader(strings.NewReader("cont"), errReader{}), 7, publish.PutOptions{}, errBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, root := newStore(t)
			put(t, s, "bin/26.1.1/x", "previous", publish.PutOptions{})
			_, err := s.Put(context.Background(), "bin/26.1.1/x", tt.r, tt.size, tt.opts)
			if err == nil {
				t.Fatal("Put succeeded")
			}
			if tt.is != nil && !errors.Is(err, tt.is) {
				t.Errorf("Put = %v, want %v", err, tt.is)
			}
			if got := read(t, s, "bin/26.1.1/x"); got != "previous" {
				t.Errorf("object after refused Put = %q, want the previous content", got)
			}
			if got := files(t, root); len(got) != 1 {
				t.Errorf("files after refused Put = %q, want only the previous object", got)
			}
		})
	}
}

var errBroken = errors.New("broken reader")

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errBroken }

func TestConditionalPut(t *testing.T) {
	s, _ := newStore(t)
	ctx := context.Background()
	first := put(t, s, "latest", "26.1.1\n", publish.PutOptions{IfNoneMatch: true})

	if _, err := s.Put(ctx, "latest", strings.NewReader("26.1.0\n"), 7, publish.PutOptions{IfNoneMatch: true}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Errorf("IfNoneMatch on an existing object = %v, want ErrPreconditionFailed", err)
	}
	if _, err := s.Put(ctx, "preview", strings.NewReader("x"), 1, publish.PutOptions{IfMatch: first.ETag}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Errorf("IfMatch on a missing object = %v, want ErrPreconditionFailed", err)
	}
	// Same size, written at once: the ETag must still change.
	second := put(t, s, "latest", "26.1.2\n", publish.PutOptions{IfMatch: first.ETag})
	if second.ETag == first.ETag {
		t.Fatalf("ETag did not change on a rewrite of the same size: %s", first.ETag)
	}
	if _, err := s.Put(ctx, "latest", strings.NewReader("26.1.0\n"), 7, publish.PutOptions{IfMatch: first.ETag}); !errors.Is(err, publish.ErrPreconditionFailed) {
		t.Errorf("IfMatch with a stale ETag = %v, want ErrPreconditionFailed", err)
	}
	if got := read(t, s, "latest"); got != "26.1.2\n" {
		t.Errorf("latest = %q, want 26.1.2", got)
	}
}

// increment adds one to the counter at key with a compare-and-swap loop,
// the way the publisher moves pointers.
func increment(ctx context.Context, s publish.Store, key string) error {
	for {
		var n int
		opts := publish.PutOptions{IfNoneMatch: true}
		if o, err := s.Open(ctx, key); err == nil {
			b, err := io.ReadAll(o)
			o.Close()
			if err != nil {
				return err
			}
			n, _ = strconv.Atoi(string(b))
			opts = publish.PutOptions{IfMatch: o.Info().ETag}
		} else if !errors.Is(err, publish.ErrNotFound) {
			return err
		}
		body := strconv.Itoa(n + 1)
		_, err := s.Put(ctx, key, strings.NewReader(body), int64(len(body)), opts)
		if errors.Is(err, publish.ErrPreconditionFailed) {
			continue
		}
		return err
	}
}

func TestConcurrentCAS(t *testing.T) {
	_, root := newStore(t)
	const workers, rounds = 8, 25
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		// A Store each: flock locks belong to the open file, so separate
		// stores exclude each other like separate processes.
		s, err := dir.New(root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range rounds {
				if err := increment(context.Background(), s, "counter"); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	s, _ := dir.New(root)
	defer s.Close()
	if got, want := read(t, s, "counter"), strconv.Itoa(workers*rounds); got != want {
		t.Errorf("counter = %s, want %s (lost updates)", got, want)
	}
}

// TestConcurrentCASProcesses races real processes (this test binary
// re-executed) on one counter.
func TestConcurrentCASProcesses(t *testing.T) {
	if root := os.Getenv("WHARF_DIR_HELPER_ROOT"); root != "" {
		s, err := dir.New(root)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		for range 50 {
			if err := increment(context.Background(), s, "counter"); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
		}
		os.Exit(0)
	}
	_, root := newStore(t)
	const procs = 4
	var cmds []*exec.Cmd
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCASProcesses$")
		cmd.Env = append(os.Environ(), "WHARF_DIR_HELPER_ROOT="+root)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, cmd)
		t.Cleanup(func() {
			if stderr.Len() > 0 {
				t.Logf("helper: %s", stderr.String())
			}
		})
	}
	for _, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("helper process: %v", err)
		}
	}
	s, _ := dir.New(root)
	defer s.Close()
	if got, want := read(t, s, "counter"), strconv.Itoa(procs*50); got != want {
		t.Errorf("counter = %s, want %s (lost updates across processes)", got, want)
	}
}

func TestList(t *testing.T) {
	s, root := newStore(t)
	for _, k := range []string{"latest", "bin/26.1.1/b.tar.gz", "bin/26.1.1/a.tar.gz", "bin-x", "bin/26.1.10/a", "img/26.1.1/n.tar", "a-b/c", "a/b"} {
		put(t, s, k, k, publish.PutOptions{})
	}
	// Leftovers of a crashed write are not objects.
	if err := os.WriteFile(filepath.Join(root, "bin", "26.1.1", ".wharf-tmp-dead-c.tar.gz"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"a-b/c", "a/b", "bin-x", "bin/26.1.1/a.tar.gz", "bin/26.1.1/b.tar.gz", "bin/26.1.10/a", "img/26.1.1/n.tar", "latest"}},
		{"bin/", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/b.tar.gz", "bin/26.1.10/a"}},
		{"bin/26.1.1/", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/b.tar.gz"}},
		{"bin/26.1.1", []string{"bin/26.1.1/a.tar.gz", "bin/26.1.1/b.tar.gz", "bin/26.1.10/a"}},
		{"bin", []string{"bin-x", "bin/26.1.1/a.tar.gz", "bin/26.1.1/b.tar.gz", "bin/26.1.10/a"}},
		{"img/27", nil},
		{"nothing/here/", nil},
	}
	for _, tt := range tests {
		t.Run(tt.prefix, func(t *testing.T) {
			list, err := s.List(context.Background(), tt.prefix)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, in := range list {
				got = append(got, in.Key)
				if in.Size != int64(len(in.Key)) || in.ETag == "" {
					t.Errorf("info %+v", in)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("List(%q) = %q, want %q", tt.prefix, got, tt.want)
			}
		})
	}
}

func TestContextCanceled(t *testing.T) {
	s, root := newStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Put(ctx, "x", strings.NewReader("x"), 1, publish.PutOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Put with a canceled context = %v", err)
	}
	if got := files(t, root); len(got) != 0 {
		t.Errorf("files = %q", got)
	}
}
