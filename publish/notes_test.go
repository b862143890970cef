package publish_test

import (
	"strings"
	"testing"

	"golang.org/x/net/html"

	"github.com/wharfhq/wharf/publish"
)

func TestRenderNotes(t *testing.T) {
	tests := []struct {
		name      string
		md        string
		want      []string // in the HTML
		forbidden []string // never in the HTML
	}{
		{"Markdown", "# 26.1.1\n\n- **engine** is *faster*\n- `treasury` [docs](https://example.com/docs)\n\n| a | b |\n|---|---|\n| 1 | 2 |\n",
			[]string{"<h3>26.1.1</h3>", "<strong>engine</strong>", "<code>treasury</code>", `<a href="https://example.com/docs">docs</a>`, "<table>"}, nil},
		{"HeadingsCapped", "##### deep\n", []string{"<h6>deep</h6>"}, nil},
		{"RawHTMLDropped", "hello <script>alert(1)</script>\n\n<iframe src=x></iframe>\n\n<img src=x onerror=alert(1)>\n",
			[]string{"hello"}, []string{"<script", "<iframe", "<img", "onerror"}},
		{"DangerousLinks", "[x](javascript:alert(1)) [y](vbscript:msgbox) ![z](data:text/html;base64,PHNjcmlwdD4=)\n",
			nil, []string{"javascript:", "vbscript:", "data:text/html"}},
		{"AttributeEscaped", `[x](https://e.com/"onmouseover="alert(1))` + "\n", nil, []string{`"onmouseover="`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := publish.RenderNotes([]byte(tt.md))
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("notes lack %q:\n%s", w, got)
				}
			}
			for _, f := range tt.forbidden {
				if strings.Contains(strings.ToLower(got), strings.ToLower(f)) {
					t.Errorf("notes contain %q:\n%s", f, got)
				}
			}
		})
	}
	t.Run("Refused", func(t *testing.T) {
		for name, md := range map[string][]byte{
			"TooLong": []byte(strings.Repeat("a", publish.MaxNotes+1)),
			"NotUTF8": {0xff, 0xfe, 'a'},
		} {
			if _, err := publish.RenderNotes(md); err == nil {
				t.Errorf("%s: RenderNotes accepted it", name)
			}
		}
	})
}

// FuzzRenderNotes: whatever the Markdown, the HTML has no element or
// attribute that runs script.
func FuzzRenderNotes(f *testing.F) {
	for _, s := range []string{"# x", "<script>x</script>", "[a](javascript:x)", "<a href=x onclick=y>", "`<b>`", "![i](data:text/html,x)", "<!-- x --><svg onload=x>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		got, err := publish.RenderNotes([]byte(md))
		if err != nil {
			return
		}
		if bad := scriptable(got); bad != "" {
			t.Fatalf("notes %q render %q, which holds %s", md, got, bad)
		}
	})
}

// scriptable returns what in an HTML fragment could run script or load
// another document: an element outside Markdown's output, an event
// handler or style attribute, a javascript:, vbscript:, file: or data:
// URL (but an image's). "" when none.
func scriptable(fragment string) string {
	allowed := map[string]bool{}
	for _, el := range strings.Fields("p h1 h2 h3 h4 h5 h6 ul ol li a em strong code pre blockquote hr br img table thead tbody tr th td del input") {
		allowed[el] = true
	}
	z := html.NewTokenizer(strings.NewReader(fragment))
	for {
		switch z.Next() {
		case html.ErrorToken:
			return ""
		case html.StartTagToken, html.SelfClosingTagToken:
			tok := z.Token()
			if !allowed[tok.Data] {
				return "element " + tok.Data
			}
			for _, a := range tok.Attr {
				// As a browser reads a URL: tabs and newlines anywhere and
				// leading controls and spaces do not count.
				key := strings.ToLower(a.Key)
				val := strings.ToLower(strings.TrimLeft(strings.NewReplacer("\t", "", "\n", "", "\r", "").Replace(a.Val), "\x00\x01\x02\x03\x04\x05\x06\x07\x08\x0b\x0c\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "))
				switch {
				case strings.HasPrefix(key, "on"), key == "style", key == "srcdoc", key == "formaction":
					return "attribute " + key
				case key == "href" || key == "src":
					scheme, _, ok := strings.Cut(val, ":")
					switch {
					case !ok:
					case scheme == "data" && key == "src" && strings.HasPrefix(val, "data:image/"):
					case scheme == "javascript", scheme == "vbscript", scheme == "data", scheme == "file":
						return key + "=" + val
					}
				case tok.Data == "input" && key == "type" && val != "checkbox":
					return "input " + val
				}
			}
		}
	}
}
