package publish

import (
	"bufio"
	"bytes"
	"fmt"
	"reflect"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/wharfhq/wharf/internal/didyoumean"
)

// configKeys are the keys wharf.toml may hold, by the table they are in
// ("" the top level), from the toml tags of Config and ArtifactSpec.
func configKeys() map[string][]string {
	tags := func(v any) []string {
		var names []string
		t := reflect.TypeOf(v)
		for i := range t.NumField() {
			if tag, _, _ := strings.Cut(t.Field(i).Tag.Get("toml"), ","); tag != "" && tag != "-" {
				names = append(names, tag)
			}
		}
		return names
	}
	return map[string][]string{"": tags(Config{}), "artifact": tags(ArtifactSpec{})}
}

// unknownKeys is a problem for each key of doc that Config does not have,
// once a key (an array of tables repeats its keys), with the lines it is
// on and the known key it is closest to. A key under an unknown table is
// not reported apart from that table.
func unknownKeys(doc []byte, undecoded []toml.Key) []error {
	known := configKeys()
	lines := keyLines(doc)
	var errs []error
	reported := map[string]bool{}
	for _, k := range undecoded {
		name := k.String()
		if reported[name] || isUnder(reported, k) {
			continue
		}
		reported[name] = true
		parent := strings.Join(k[:len(k)-1], ".")
		msg := "unknown key " + name
		if ls := lines[name]; len(ls) == 1 {
			msg += " on line " + strconv.Itoa(ls[0])
		} else if len(ls) > 1 {
			msg += " on lines " + joinInts(ls)
		}
		if s := didyoumean.Closest(k[len(k)-1], known[parent]); s != "" {
			msg += fmt.Sprintf(" (did you mean %s?)", strings.TrimPrefix(parent+"."+s, "."))
		} else if len(known[parent]) > 0 {
			msg += " (" + describeKeys(parent, known[parent]) + ")"
		}
		errs = append(errs, fmt.Errorf("%s", msg))
	}
	return errs
}

// isUnder reports whether a table above k was reported.
func isUnder(reported map[string]bool, k toml.Key) bool {
	for i := 1; i < len(k); i++ {
		if reported[strings.Join(k[:i], ".")] {
			return true
		}
	}
	return false
}

func describeKeys(table string, keys []string) string {
	if table == "" {
		return "the top level has " + strings.Join(keys, ", ")
	}
	return "an " + table + " has " + strings.Join(keys, ", ")
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ", ")
}

// keyLines finds the lines (from 1) each key of a TOML document is set
// on: "k = v" lines under their [table] or [[table]] header, and the
// headers themselves. It reads wharf.toml's plain shape; a key it cannot
// place is reported without lines.
func keyLines(doc []byte) map[string][]int {
	lines := map[string][]int{}
	table := ""
	sc := bufio.NewScanner(bytes.NewReader(doc))
	sc.Buffer(nil, len(doc)+1)
	for n := 1; sc.Scan(); n++ {
		t := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(t, "[["):
			if end := strings.Index(t, "]]"); end > 0 {
				table = keyPath(t[2:end])
				lines[table] = append(lines[table], n)
			}
		case strings.HasPrefix(t, "["):
			if end := strings.Index(t, "]"); end > 0 {
				table = keyPath(t[1:end])
				lines[table] = append(lines[table], n)
			}
		case t == "" || t[0] == '#':
		default:
			k, _, ok := strings.Cut(t, "=")
			if !ok {
				continue
			}
			full := keyPath(k)
			if table != "" {
				full = table + "." + full
			}
			lines[full] = append(lines[full], n)
		}
	}
	return lines
}

// keyPath is a dotted TOML key as Key.String writes it: its parts
// unquoted and trimmed.
func keyPath(s string) string {
	parts := strings.Split(s, ".")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if u, err := strconv.Unquote(p); err == nil {
			p = u
		} else {
			p = strings.Trim(p, "'")
		}
		parts[i] = p
	}
	return toml.Key(parts).String()
}
