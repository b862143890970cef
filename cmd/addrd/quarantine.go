package main

import (
	"fmt"
	"log/slog"
	"strconv"
	"text/tabwriter"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
)

func quarantineCommand() *cli.Command {
	return &cli.Command{
		Name:      "quarantine",
		Usage:     "list the fields of a chain's rows stored changed: a NUL byte, invalid UTF-8, control characters or beyond their bound",
		UsageText: "addrd quarantine --chain NAME [--limit N] [--db DB]",
		Description: `What a node or a contract sends is stored whatever it holds: a field no
database keeps as text, or a string from the chain beyond its bound (a
symbol of 32 characters, a name of 128, a revert reason of 2,048), is
stored made text and recorded here, newest block first: the block, the
transaction or the holder, the field, why and how long it was. serve logs
each as it is stored and counts them in addrd_store_quarantined_fields_total.

Example:
   addrd quarantine --chain ETH --limit 20`,
		Flags: []cli.Flag{dbFlag(),
			&cli.StringFlag{Name: "chain", Required: true, Usage: "the chain `NAME`, as in serve's --chain NAME=RPC_URL"},
			&cli.IntFlag{Name: "limit", Value: 100, Usage: "list at most `N` fields"}},
		Action: listQuarantine,
	}
}

func listQuarantine(c *cli.Context) error {
	if c.NArg() > 0 {
		return shell.Usagef("quarantine: unexpected argument %q", c.Args().First())
	}
	if c.Int("limit") < 1 {
		return shell.Usagef("quarantine: --limit %d: want 1 or more", c.Int("limit"))
	}
	db, err := openDB(c)
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	defer db.Close()
	fields, err := db.Quarantine(c.Context, c.String("chain"), c.Int("limit"))
	if err != nil {
		return fmt.Errorf("quarantine: %w", err)
	}
	if len(fields) == 0 {
		fmt.Fprintf(c.App.Writer, "nothing quarantined on %s\n", c.String("chain"))
		return nil
	}
	w := tabwriter.NewWriter(c.App.Writer, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "BLOCK\tTRANSACTION OR HOLDER\tFIELD\tREASON\tBYTES\tSTORED AT")
	for _, q := range fields {
		row := q.TxHash
		if row == "" {
			row = q.Address
		}
		fmt.Fprintf(w, "%d\t%s\t%s\t%s\t%s\t%s\n", q.Block, row, q.Field, q.Reason, strconv.Itoa(q.Length), q.At.Format("2006-01-02T15:04:05Z"))
	}
	return w.Flush()
}

// quarantineLog is the store's WithQuarantine hook of addrd serve: each
// field a write stored changed is logged, as a warning naming its row,
// and counted in addrd_store_quarantined_fields_total{chain, field}
// (the field without its transfer's index). The table quarantine keeps
// them all.
func quarantineLog(log *slog.Logger, reg prometheus.Registerer) func(query.Quarantined) {
	fields := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "addrd", Subsystem: "store", Name: "quarantined_fields_total",
		Help: "Fields of rows from the chain stored changed: a NUL byte, invalid UTF-8, control characters or beyond their bound (the table quarantine lists them)."},
		[]string{"chain", "field"})
	reg.MustRegister(fields)
	return func(q query.Quarantined) {
		fields.WithLabelValues(q.Chain, fieldKind(q.Field)).Inc()
		log.Warn("store: field quarantined: stored changed", "chain", q.Chain, "block", q.Block, "tx", q.TxHash,
			"address", q.Address, "field", q.Field, "reason", q.Reason, "length", q.Length)
	}
}

// fieldKind is a quarantined field's name without its transfer's index:
// "transfers[3].symbol" is "transfers.symbol".
func fieldKind(f string) string {
	i, j := -1, -1
	for k := 0; k < len(f); k++ {
		switch f[k] {
		case '[':
			i = k
		case ']':
			j = k
		}
	}
	if i < 0 || j < i {
		return f
	}
	return f[:i] + f[j+1:]
}
