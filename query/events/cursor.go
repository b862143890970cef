package events

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
)

// A cursor is a position in one requester's feed: base64url (unpadded)
// of a version byte, the account's id and the position, as unsigned
// varints. It is opaque to clients; it carries no secret, since a
// position tells nothing a requester may not read: the account in it
// only lets a cursor of another requester be refused.
const cursorVersion = 1

// maxCursorLen bounds the text of a cursor; real ones are under 30.
const maxCursorLen = 64

// Errors of ParseCursor.
var (
	ErrBadCursor   = errors.New("malformed cursor")
	ErrOtherCursor = errors.New("cursor of another requester")
)

// Cursor returns the cursor of position in account's feed.
func Cursor(account, position int64) string {
	b := []byte{cursorVersion}
	b = binary.AppendUvarint(b, uint64(account))
	b = binary.AppendUvarint(b, uint64(position))
	return base64.RawURLEncoding.EncodeToString(b)
}

// ParseCursor returns the position of a cursor of account's feed.
func ParseCursor(account int64, s string) (int64, error) {
	if len(s) > maxCursorLen {
		return 0, ErrBadCursor
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) < 3 || b[0] != cursorVersion {
		return 0, ErrBadCursor
	}
	b = b[1:]
	acct, n := binary.Uvarint(b)
	if n <= 0 || acct > 1<<62 {
		return 0, ErrBadCursor
	}
	b = b[n:]
	pos, n := binary.Uvarint(b)
	if n <= 0 || n != len(b) || pos > 1<<62 {
		return 0, ErrBadCursor
	}
	if int64(acct) != account {
		return 0, ErrOtherCursor
	}
	return int64(pos), nil
}
