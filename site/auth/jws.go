package auth

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// checkJWS refuses what the JWT library would let through but a token of
// wharf or of an OpenID Connect issuer never holds: a "crit" header (RFC
// 7515 4.1.11: a token naming extensions the recipient must understand is
// refused by one that understands none), and exp, iat or nbf that are not
// JSON numbers (golang-jwt reads a quoted "99999999999" as a time).
func checkJWS(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return errors.New("malformed token")
	}
	var header map[string]json.RawMessage
	if err := decodeSegment(parts[0], &header); err != nil {
		return fmt.Errorf("malformed header: %w", err)
	}
	if _, ok := header["crit"]; ok {
		return errors.New(`header "crit" names extensions wharf does not understand`)
	}
	var claims map[string]json.RawMessage
	if err := decodeSegment(parts[1], &claims); err != nil {
		return fmt.Errorf("malformed claims: %w", err)
	}
	for _, name := range []string{"exp", "iat", "nbf"} {
		v, ok := claims[name]
		if !ok {
			continue
		}
		v = bytes.TrimSpace(v)
		if len(v) == 0 || (v[0] != '-' && (v[0] < '0' || v[0] > '9')) {
			return fmt.Errorf("claim %s is %.30s, not a number", name, v)
		}
	}
	return nil
}

func decodeSegment(seg string, v any) error {
	b, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, v)
}
