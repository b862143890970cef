package api

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// A page token is base64url (unpadded) of
//
//	version (1 byte) | cursor | MAC (16 bytes)
//
// where MAC is HMAC-SHA256, cut to 128 bits, keyed by the server secret
// "page-token", over version, the token's kind, its scope (the requester
// and what it lists) and the cursor. The scope is not in the token: a
// token minted for another address, list or requester fails the MAC.
// The page size is not in it either, so it may change between pages.
const (
	tokenVersion = 1
	tokenMACSize = 16
	// maxTokenLen bounds the text of a token; real ones are well below.
	maxTokenLen = 512
)

// Token kinds, so that a token of one list is not taken by another.
const (
	kindTransactions  byte = 't'
	kindSubscriptions byte = 's'
	kindChanges       byte = 'b'
	kindDeliveries    byte = 'd'
	// kindWalletTransactions: a wallet's transactions.
	kindWalletTransactions byte = 'w'
)

var errBadToken = errors.New("invalid page token")

// tokenCodec mints and checks page tokens with one key.
type tokenCodec struct{ key []byte }

func (c tokenCodec) mac(kind byte, scope, cursor []byte) []byte {
	m := hmac.New(sha256.New, c.key)
	var hdr [2]byte
	hdr[0], hdr[1] = tokenVersion, kind
	m.Write(hdr[:])
	var n [binary.MaxVarintLen64]byte
	m.Write(n[:binary.PutUvarint(n[:], uint64(len(scope)))])
	m.Write(scope)
	m.Write(cursor)
	return m.Sum(nil)[:tokenMACSize]
}

// encode mints the token of cursor for kind and scope.
func (c tokenCodec) encode(kind byte, scope, cursor []byte) string {
	b := make([]byte, 0, 1+len(cursor)+tokenMACSize)
	b = append(b, tokenVersion)
	b = append(b, cursor...)
	b = append(b, c.mac(kind, scope, cursor)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// decode checks a token for kind and scope and returns its cursor.
func (c tokenCodec) decode(kind byte, scope []byte, tok string) ([]byte, error) {
	if len(tok) > maxTokenLen {
		return nil, errBadToken
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(tok)
	if err != nil || len(b) < 1+tokenMACSize || b[0] != tokenVersion {
		return nil, errBadToken
	}
	cursor, mac := b[1:len(b)-tokenMACSize], b[len(b)-tokenMACSize:]
	if !hmac.Equal(mac, c.mac(kind, scope, cursor)) {
		return nil, errBadToken
	}
	return cursor, nil
}

// Cursor encodings: unsigned varints and length-prefixed strings.

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// reader reads a cursor; any malformation sets err.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errBadToken
		r.b = nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *reader) string() string {
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		r.err = errBadToken
		r.b = nil
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

// done reports an error unless the whole cursor was read.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		return errBadToken
	}
	return r.err
}

// scope builds the MAC scope from its parts.
func scope(account int64, parts ...string) []byte {
	b := binary.AppendVarint(nil, account)
	for _, p := range parts {
		b = appendString(b, p)
	}
	return b
}
