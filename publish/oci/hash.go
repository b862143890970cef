package oci

import (
	"crypto/sha256"
	"hash"
	"sync"
)

// asyncHash is a SHA-256 fed on a goroutine of its own: Write copies the
// bytes and returns, so a reader that hashes what it parses (the files of
// an archive) and the whole stream at once uses two cores.
type asyncHash struct {
	h    hash.Hash
	ch   chan []byte
	done chan struct{}
	pool sync.Pool
	once sync.Once
}

func newAsyncHash() *asyncHash {
	a := &asyncHash{h: sha256.New(), ch: make(chan []byte, 8), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			a.h.Write(b)
			b = b[:0]
			a.pool.Put(&b)
		}
	}()
	return a
}

// Write hands a copy of p to the hashing goroutine.
func (a *asyncHash) Write(p []byte) (int, error) {
	var b []byte
	if v, ok := a.pool.Get().(*[]byte); ok {
		b = *v
	}
	a.ch <- append(b, p...)
	return len(p), nil
}

// Close stops the goroutine; Sum after Close is the digest of everything
// written.
func (a *asyncHash) Close() {
	a.once.Do(func() { close(a.ch) })
	<-a.done
}

// Sum is the digest of everything written.
func (a *asyncHash) Sum() []byte {
	a.Close()
	return a.h.Sum(nil)
}
