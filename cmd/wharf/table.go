package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// newTable starts a list command's table on w with its header row, the
// columns separated by tabs; Flush writes it.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// when is a time as the list commands print it, in UTC.
func when(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }
