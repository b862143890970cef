package publish_test

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

const goodSums = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  a-26.1.2-linux-amd64.tar.gz\n" +
	"fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210  b-26.1.2-linux-arm64.tar.gz\n"

func TestParseSums(t *testing.T) {
	got, err := publish.ParseSums([]byte(goodSums))
	if err != nil || len(got) != 2 || got[1].Name != "b-26.1.2-linux-arm64.tar.gz" || got[0].SHA256[:4] != "0123" {
		t.Fatalf("ParseSums = %+v, %v", got, err)
	}
	lines := strings.SplitAfter(goodSums, "\n")
	for name, b := range map[string]string{
		"Empty":        "",
		"NoNewline":    strings.TrimSuffix(goodSums, "\n"),
		"OutOfOrder":   lines[1] + lines[0],
		"Twice":        lines[0] + lines[0],
		"Binary":       strings.Replace(goodSums, "  a-", " *a-", 1),
		"UpperHex":     strings.Replace(goodSums, "0123456789abcdef", "0123456789ABCDEF", 1),
		"ShortHash":    strings.Replace(goodSums, "0123456789abcdef0", "0123456789abcdef", 1),
		"OneSpace":     strings.Replace(goodSums, "  a-", " a-", 1),
		"NUL":          strings.Replace(goodSums, "a-26", "a\x0026", 1),
		"CR":           strings.ReplaceAll(goodSums, "\n", "\r\n"),
		"Slash":        strings.Replace(goodSums, "a-26", "../26", 1),
		"TrailingLine": goodSums + "\n",
		"Comment":      "# sums\n" + goodSums,
	} {
		t.Run(name, func(t *testing.T) {
			if got, err := publish.ParseSums([]byte(b)); !errors.Is(err, publish.ErrSumsMalformed) {
				t.Errorf("ParseSums = %+v, %v; want ErrSumsMalformed", got, err)
			}
		})
	}
}

// sumsForm is the exact form of a SHA256SUMS line, as the install script
// checks it.
var sumsForm = regexp.MustCompile(`^[0-9a-f]{64}  [A-Za-z0-9._+-]+$`)

func FuzzParseSums(f *testing.F) {
	f.Add([]byte(goodSums))
	f.Add([]byte("x  y\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		entries, err := publish.ParseSums(b)
		// The script's rule, written again: each line of the form, the
		// names increasing, a final newline.
		s := string(b)
		want := s != "" && strings.HasSuffix(s, "\n") && len(b) <= 64<<10
		prev := ""
		for _, l := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
			if !want {
				break
			}
			want = sumsForm.MatchString(l) && l[66:] > prev
			if want {
				prev = l[66:]
			}
		}
		if (err == nil) != want {
			t.Fatalf("ParseSums(%q) = %v, the rule says %v", b, err, want)
		}
		if err != nil {
			return
		}
		var back strings.Builder
		for _, e := range entries {
			fmt.Fprintf(&back, "%s  %s\n", e.SHA256, e.Name)
		}
		if back.String() != s {
			t.Fatalf("ParseSums(%q) writes back as %q", b, back.String())
		}
	})
}
