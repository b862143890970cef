package main

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/store"
)

// TestQuarantine: a field stored changed is logged and counted by serve's
// hook, and addrd quarantine lists it.
func TestQuarantine(t *testing.T) {
	ctx := context.Background()
	var logs bytes.Buffer
	reg := prometheus.NewRegistry()
	dsn := filepath.Join(t.TempDir(), "addrd.db")
	db, err := store.Open(ctx, dsn, store.WithQuarantine(quarantineLog(slog.New(slog.NewJSONHandler(&logs, nil)), reg)))
	if err != nil {
		t.Fatal(err)
	}
	hash := "0x" + strings.Repeat("ab", 32)
	tx := query.Transaction{Chain: "ETH", Hash: hash, BlockNumber: 7, BlockHash: "0xb7", BlockTime: time.Unix(1_700_000_000, 0).UTC(),
		Status: query.StatusSuccess, From: "0x" + strings.Repeat("a", 40), To: "0x" + strings.Repeat("b", 40),
		Transfers: []query.Transfer{{Position: 3, Kind: query.KindToken, Asset: query.AssetERC20, Contract: "0x" + strings.Repeat("c", 40),
			From: "0x" + strings.Repeat("a", 40), To: "0x" + strings.Repeat("b", 40), Amount: query.AmountOf(1), Symbol: "US\x00DC"}}}
	if err := db.StoreBlock(ctx, "ETH", query.Block{Number: 7, Hash: "0xb7"}, []query.Transaction{tx}, nil); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if !strings.Contains(logs.String(), `"msg":"store: field quarantined: stored changed"`) || !strings.Contains(logs.String(), `"field":"transfers[0].symbol"`) {
		t.Errorf("logs: %s", logs.String())
	}
	if got := quarantined(t, reg); len(got) != 1 || got["transfers.symbol"] != 1 {
		t.Errorf("addrd_store_quarantined_fields_total = %v, want transfers.symbol 1", got)
	}
	out, _, err := run(t, "quarantine", "--db", dsn, "--chain", "ETH")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, hash) || !strings.Contains(out, "transfers[0].symbol") || !strings.Contains(out, "NUL byte") {
		t.Errorf("addrd quarantine printed:\n%s", out)
	}
	if out, _, err := run(t, "quarantine", "--db", dsn, "--chain", "BTC"); err != nil || !strings.Contains(out, "nothing quarantined on BTC") {
		t.Errorf("addrd quarantine --chain BTC: %v\n%s", err, out)
	}
}

// quarantined returns the series of addrd_store_quarantined_fields_total
// in reg, by their field label.
func quarantined(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		if mf.GetName() != "addrd_store_quarantined_fields_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "field" {
					out[l.GetValue()] = m.GetCounter().GetValue()
				}
			}
		}
	}
	return out
}
