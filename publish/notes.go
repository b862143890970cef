package publish

import (
	"bytes"
	"fmt"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/parser"
	"github.com/yuin/goldmark/text"
	"github.com/yuin/goldmark/util"
)

// MaxNotes bounds a release's notes (Markdown source).
const MaxNotes = 64 << 10

// RenderNotes renders release notes written in Markdown (CommonMark with
// GitHub's tables, strikethrough, task lists and autolinks) to the HTML the
// download page shows. It is safe to put into a page as it is: raw HTML in
// the source is dropped, not passed through, and links or images with a
// javascript:, vbscript:, file: or data: (other than images) URL lose it
// (goldmark's defaults, which this keeps). Headings move down two levels,
// so that "# Title" sits below the release's own heading.
func RenderNotes(md []byte) (string, error) {
	if len(md) > MaxNotes {
		return "", fmt.Errorf("release notes: %d bytes, at most %d", len(md), MaxNotes)
	}
	if !utf8.Valid(md) {
		return "", fmt.Errorf("release notes: not UTF-8 text")
	}
	conv := goldmark.New(
		goldmark.WithExtensions(extension.GFM),
		goldmark.WithParserOptions(parser.WithASTTransformers(util.Prioritized(headingShift{}, 100))),
		// No html.WithUnsafe: raw HTML and dangerous URLs are not rendered.
	)
	var out bytes.Buffer
	if err := conv.Convert(md, &out); err != nil {
		return "", fmt.Errorf("release notes: %w", err)
	}
	return out.String(), nil
}

// headingShift moves every heading down two levels (h1 → h3), capped at h6.
type headingShift struct{}

func (headingShift) Transform(doc *ast.Document, _ text.Reader, _ parser.Context) {
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if h, ok := n.(*ast.Heading); ok && entering {
			h.Level = min(h.Level+2, 6)
		}
		return ast.WalkContinue, nil
	})
}
