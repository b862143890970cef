package publish

import (
	"fmt"
	"strings"
)

// CheckKey reports whether key is a safe relative object key: non-empty,
// slash-separated, without ".", ".." or empty elements, backslashes, NUL or
// other control characters. Stores call it before touching a key.
func CheckKey(key string) error {
	if key == "" || len(key) > 1024 {
		return fmt.Errorf("%w %q: empty or longer than 1024 bytes", ErrInvalidKey, key)
	}
	for _, r := range key {
		if r < 0x20 || r == 0x7f || r == '\\' {
			return fmt.Errorf("%w %q: control character or backslash", ErrInvalidKey, key)
		}
	}
	for _, el := range strings.Split(key, "/") {
		if el == "" || el == "." || el == ".." {
			return fmt.Errorf("%w %q: empty, \".\" or \"..\" element", ErrInvalidKey, key)
		}
	}
	return nil
}
