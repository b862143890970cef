// Package didyoumean finds the known name a mistyped one was meant to be,
// for the "did you mean" of both commands' flags and commands and of
// wharf.toml's keys.
package didyoumean

import "strings"

// Closest is the name among known that s is a likely typo of: the one the
// fewest edits (see Distance; ignoring case) away,
// at most two edits and fewer than half of s; the first of equals, or ""
// when none is that close.
func Closest(s string, known []string) string {
	best, bestD := "", 3
	ls := strings.ToLower(s)
	for _, k := range known {
		d := Distance(ls, strings.ToLower(k))
		if d < bestD && 2*d < len(s) {
			best, bestD = k, d
		}
	}
	return best
}

// Distance is the optimal string alignment distance of a and b, counted
// in bytes: insertions, deletions, substitutions and transpositions of
// two neighbours ("stroe" is one edit from "store").
func Distance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
