package hosting

import (
	"fmt"
	"regexp"

	"github.com/wharfhq/wharf/publish"
)

// pin is a short URL of latest or preview written into a configuration:
// the proxy answers Path with a 302 to Location without asking wharf.
type pin struct {
	Path, Location string
}

// pinnedName matches what a pinned path or location may hold: the
// characters wharf's own paths allow, in segments, so that nothing in
// them ends a directive or is read as a pattern.
var pinnedName = regexp.MustCompile(`^(?:/[A-Za-z0-9_+-][A-Za-z0-9._+-]*)+$`)

// segment matches one such segment: an artifact or build name.
var segment = regexp.MustCompile(`^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$`)

// buildNames are the path segments that name build b (mac is also macos).
func buildNames(b string) []string {
	if b == "mac" {
		return []string{"mac", "macos"}
	}
	return []string{b}
}

// pins lists the short URLs of release r under each prefix ("" for the
// bare /{build}/{name} form of latest), as wharf serve answers them: for
// each build name and artifact name the release's first such artifact,
// and its signature with /sig.
func pins(r *publish.Release, prefixes ...string) ([]pin, error) {
	var out []pin
	seen := map[string]bool{}
	for _, prefix := range prefixes {
		for _, a := range r.Artifacts {
			for _, b := range buildNames(a.Build) {
				path := prefix + "/" + b + "/" + a.Name
				if seen[path] {
					continue
				}
				seen[path] = true
				loc := "/" + a.Key
				if !segment.MatchString(a.Name) || !segment.MatchString(b) || !pinnedName.MatchString(loc) {
					return nil, fmt.Errorf("release %s: artifact %q (%s) has a name no configuration may hold", r.Version, a.Name, a.Key)
				}
				out = append(out, pin{path, loc}, pin{path + "/sig", loc + "/sig"})
			}
		}
	}
	return out, nil
}
