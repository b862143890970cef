package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
)

// writeSums writes SHA256SUMS (sha256sum format) and its .sig for each
// kind of the release. The signature is of metadata (SignMetadata) at the
// file's URL: it names the tree and the version, so a SHA256SUMS of
// another tree or another version signed by the same key is refused.
func (r *publishRun) writeSums(ctx context.Context, arts []Artifact, inputs []Input) error {
	kinds := map[string][]Artifact{}
	var order []string
	if r.DryRun && !r.res.Existing {
		for _, in := range inputs {
			if _, ok := kinds[in.Kind()]; !ok {
				order = append(order, in.Kind())
			}
			kinds[in.Kind()] = nil
		}
		for _, k := range order {
			r.wrote(SumsKey(k, r.v))
			r.wrote(SigKey(SumsKey(k, r.v)))
		}
		return nil
	}
	for _, a := range arts {
		if _, ok := kinds[a.Kind]; !ok {
			order = append(order, a.Kind)
		}
		kinds[a.Kind] = append(kinds[a.Kind], a)
	}
	for _, kind := range order {
		list := slices.Clone(kinds[kind])
		sort.Slice(list, func(i, j int) bool { return list[i].FileName() < list[j].FileName() })
		var b bytes.Buffer
		for _, a := range list {
			fmt.Fprintf(&b, "%s  %s\n", a.SHA256, a.FileName())
		}
		if err := r.writeSum(ctx, SumsKey(kind, r.v), b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// writeSum writes one SHA256SUMS with its .sig (replaceSigned), or, when
// the bytes are there already, makes its .sig one valid signature of them.
func (r *publishRun) writeSum(ctx context.Context, key string, body []byte) error {
	for {
		old, etag, err := r.readSmall(ctx, key)
		if err != nil && !errors.Is(err, ErrNotFound) {
			return err
		}
		if err == nil && bytes.Equal(old, body) {
			return r.ensureSigned(ctx, key, true)
		}
		err = r.replaceSigned(ctx, key, etag, body, PutOptions{ContentType: "text/plain; charset=utf-8"})
		if !errors.Is(err, ErrPreconditionFailed) {
			return err
		}
	}
}

// ErrSumsMalformed is returned by ParseSums for bytes that are not a
// SHA256SUMS as publish writes it.
var ErrSumsMalformed = errors.New("malformed SHA256SUMS")

// maxSumsSize bounds a SHA256SUMS; a real one is about 100 bytes a file.
const maxSumsSize = 64 << 10

// SumsEntry is one line of a SHA256SUMS.
type SumsEntry struct {
	SHA256 string // 64 lower-case hex digits
	Name   string // the canonical file name
}

// ParseSums reads a SHA256SUMS strictly, as the install script does:
// every line "<64 lower-case hex>  <name>" with a name of letters, digits
// and . _ + -, the names in increasing byte order, each line ending with a
// newline, nothing else. Errors: ErrSumsMalformed.
func ParseSums(b []byte) ([]SumsEntry, error) {
	bad := func(format string, args ...any) ([]SumsEntry, error) {
		return nil, fmt.Errorf("%w: %s", ErrSumsMalformed, fmt.Sprintf(format, args...))
	}
	if len(b) == 0 || len(b) > maxSumsSize {
		return bad("%d bytes, want 1 to %d", len(b), maxSumsSize)
	}
	if b[len(b)-1] != '\n' {
		return bad("does not end with a newline (cut off?)")
	}
	var out []SumsEntry
	for i, line := range bytes.Split(b[:len(b)-1], []byte("\n")) {
		if len(line) < 67 || line[64] != ' ' || line[65] != ' ' || !isLowerHex(line[:64]) || !isSumsName(line[66:]) {
			return bad("line %d %.80q is not a SHA-256 and a file name", i+1, line)
		}
		e := SumsEntry{SHA256: string(line[:64]), Name: string(line[66:])}
		if len(out) > 0 && e.Name <= out[len(out)-1].Name {
			return bad("line %d: %s is out of order", i+1, e.Name)
		}
		out = append(out, e)
	}
	return out, nil
}

func isLowerHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

func isSumsName(b []byte) bool {
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '+' || c == '-') {
			return false
		}
	}
	return len(b) > 0
}
