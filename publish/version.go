// Package publish is the write side of wharf: release versions, artifact
// names and object keys, the release manifest, signing, the Store seam and
// the pipeline that lays a signed release tree into a store.
//
// It imports neither net/http nor a storage driver; the adapters live in
// publish/dir and publish/s3.
package publish

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// ErrVersionMalformed is returned by ParseVersion for a string that is not
// YY.F.P or YY.F.P-pre.C.
var ErrVersionMalformed = errors.New("malformed version")

// Version is a release version: YY.F.P, or YY.F.P-pre.C for a preview.
// The zero Version is not valid.
type Version struct {
	Year    int // two digits, 0-99
	Feature int // feature release within the year, from 1
	Patch   int // patch release, from 1
	Commits int // commits on top of the previous release; 0 for a release
}

// ParseVersion parses s, reporting which rule a malformed version breaks.
func ParseVersion(s string) (Version, error) {
	bad := func(rule string) (Version, error) {
		return Version{}, fmt.Errorf("%w %q: %s (want YY.F.P or YY.F.P-pre.C, e.g. 26.1.2 or 26.1.3-pre.4)", ErrVersionMalformed, s, rule)
	}
	if len(s) > 64 {
		return bad("too long")
	}
	core, pre, isPre := strings.Cut(s, "-")
	parts := strings.Split(core, ".")
	if len(parts) != 3 {
		return bad("needs three dot-separated numbers")
	}
	if len(parts[0]) != 2 || !digits(parts[0]) {
		return bad("YY must be two digits")
	}
	var v Version
	v.Year, _ = strconv.Atoi(parts[0])
	var ok bool
	if v.Feature, ok = positive(parts[1]); !ok {
		return bad("F must be a number from 1 without leading zeros")
	}
	if v.Patch, ok = positive(parts[2]); !ok {
		return bad("P must be a number from 1 without leading zeros")
	}
	if isPre {
		c, found := strings.CutPrefix(pre, "pre.")
		if !found {
			return bad(`a preview suffix must be "-pre.C"`)
		}
		if v.Commits, ok = positive(c); !ok {
			return bad("C must be a number from 1 without leading zeros")
		}
	}
	return v, nil
}

func digits(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func positive(s string) (int, bool) {
	if !digits(s) || s[0] == '0' || len(s) > 9 {
		return 0, false
	}
	n, _ := strconv.Atoi(s)
	return n, true
}

// String formats v as YY.F.P or YY.F.P-pre.C.
func (v Version) String() string {
	s := fmt.Sprintf("%02d.%d.%d", v.Year, v.Feature, v.Patch)
	if v.Commits > 0 {
		s += fmt.Sprintf("-pre.%d", v.Commits)
	}
	return s
}

// IsPreview reports whether v is a preview (YY.F.P-pre.C).
func (v Version) IsPreview() bool { return v.Commits > 0 }

// Kind is "preview" or "release".
func (v Version) Kind() string {
	if v.IsPreview() {
		return KindPreview
	}
	return KindRelease
}

// Release kinds, as written in the manifest.
const (
	KindRelease = "release"
	KindPreview = "preview"
)

// Compare orders versions: -1 if v < w, 0 if equal, +1 if v > w. A preview
// sorts before the release with the same YY.F.P, as in semantic versioning.
func (v Version) Compare(w Version) int {
	for _, d := range [...]int{v.Year - w.Year, v.Feature - w.Feature, v.Patch - w.Patch} {
		if d != 0 {
			return sign(d)
		}
	}
	switch {
	case v.Commits == w.Commits:
		return 0
	case v.Commits == 0:
		return 1
	case w.Commits == 0:
		return -1
	}
	return sign(v.Commits - w.Commits)
}

func sign(d int) int {
	if d < 0 {
		return -1
	}
	return 1
}

// CheckPreview enforces versioning rule 3 of the spec: the P of a preview is
// the P of the previous non-preview release plus one. prev is the newest
// release below v; ok is false when no release is known, and then any
// preview is accepted.
func (v Version) CheckPreview(prev Version, ok bool) error {
	if !v.IsPreview() || !ok {
		return nil
	}
	if v.Patch != prev.Patch+1 {
		return fmt.Errorf("preview %s: P must be the previous release's P + 1 (previous release %s, so %02d.%d.%d-pre.C)",
			v, prev, v.Year, v.Feature, prev.Patch+1)
	}
	return nil
}
