package main

import (
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/query"
)

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
