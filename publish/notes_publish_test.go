package publish_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/wharfhq/wharf/publish"
)

// TestPublishNotes: the notes given to Publish are kept in releases.json,
// Markdown and HTML, and shown in index.html; publishing the version again
// with other notes replaces them (and nothing else), without notes keeps
// them; notes that cannot be rendered are refused before anything is
// written.
func TestPublishNotes(t *testing.T) {
	s := dirStore(t, t.TempDir())
	p := newPublisher(t, s, fixedSigner(t))
	in := demoInputs(t, "one")
	publishWith := func(notes string) *publish.Result {
		t.Helper()
		p.Notes = notes
		res, err := p.Publish(context.Background(), "26.1.1", scan(t, in))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	notesOf := func() (string, string) {
		t.Helper()
		r, ok := manifest(t, s).Find("26.1.1")
		if !ok {
			t.Fatal("no 26.1.1 in releases.json")
		}
		return r.Notes, r.NotesHTML
	}
	publishWith("## Fixed\n\n- the **engine** leak <script>x</script>\n")
	md, html := notesOf()
	if md != "## Fixed\n\n- the **engine** leak <script>x</script>\n" || html != "<h4>Fixed</h4>\n<ul>\n<li>the <strong>engine</strong> leak <!-- raw HTML omitted -->x<!-- raw HTML omitted --></li>\n</ul>\n" {
		t.Errorf("releases.json notes = %q, %q", md, html)
	}
	if index := string(readKey(t, s, publish.KeyIndex)); !strings.Contains(index, "<strong>engine</strong> leak") || strings.Contains(index, "<script>x") {
		t.Error("index.html does not show the notes (safely)")
	}

	before := snapshot(t, s)
	res := publishWith("Replaced.\n")
	if md, _ := notesOf(); md != "Replaced.\n" || !res.Existing {
		t.Errorf("re-publish with other notes: notes %q, existing %v", md, res.Existing)
	}
	after := snapshot(t, s)
	var changed []string
	for k, v := range after {
		if before[k] != v {
			changed = append(changed, k)
		}
	}
	slices.Sort(changed)
	if got := strings.Join(changed, " "); got != "index.html releases.json releases.json.sig" {
		t.Errorf("replacing the notes changed %v, want index.html and releases.json (and its signature) only", changed)
	}
	if res := publishWith(""); len(res.Written) != 0 {
		t.Errorf("re-publish without notes wrote %v", res.Written)
	}
	if md, _ := notesOf(); md != "Replaced.\n" {
		t.Errorf("re-publish without notes dropped them: %q", md)
	}

	p.Notes = "\xff not UTF-8"
	if _, err := p.Publish(context.Background(), "26.1.2", scan(t, in)); err == nil || !strings.Contains(err.Error(), "release notes") {
		t.Errorf("publish with broken notes = %v", err)
	}
	if _, ok := manifest(t, s).Find("26.1.2"); ok {
		t.Error("broken notes published a release")
	}
}
