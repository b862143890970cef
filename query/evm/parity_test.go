package evm

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/wharfhq/wharf/query"
)

// TestParityTraces: trace_block's entries give the same movements as
// callTracer's frames: type, path from the trace address, the error of a
// reverted call on it and everything under it, a failed transaction's
// top-level call with its reason.
func TestParityTraces(t *testing.T) {
	const (
		block = "0x00000000000000000000000000000000000000000000000000000000000000b1"
		txA   = "0x00000000000000000000000000000000000000000000000000000000000000aa"
		txB   = "0x00000000000000000000000000000000000000000000000000000000000000bb"
	)
	addr := func(c byte) string {
		return "0x00000000000000000000000000000000000000" + string([]byte{'0' + c/16, "0123456789abcdef"[c%16]})
	}
	entry := func(tx, typ, callType string, from, to byte, value string, path []int, errText string) map[string]any {
		e := map[string]any{"type": typ, "action": map[string]any{"callType": callType, "from": addr(from), "to": addr(to), "value": value},
			"traceAddress": path, "transactionHash": tx, "blockHash": block}
		if errText != "" {
			e["error"] = errText
		}
		return e
	}
	create := entry(txA, "create", "", 0x0b, 0, "0x0", []int{2}, "")
	create["result"] = map[string]any{"address": addr(0x0f)}
	suicide := map[string]any{"type": "suicide", "action": map[string]any{"address": addr(0x0f), "refundAddress": addr(0x10), "balance": "0x3"},
		"traceAddress": []int{3}, "transactionHash": txA, "blockHash": block}
	traces := []map[string]any{
		entry(txA, "call", "call", 0x0a, 0x0b, "0x0", []int{}, ""),
		entry(txA, "call", "call", 0x0b, 0x0c, "0x5", []int{0}, ""),
		entry(txA, "call", "call", 0x0b, 0x0d, "0x6", []int{1}, "Reverted"),
		entry(txA, "call", "call", 0x0d, 0x0e, "0x1", []int{1, 0}, ""),
		create, suicide,
		entry(txB, "call", "call", 0x0a, 0x0b, "0x9", []int{}, "Reverted"),
		entry(txB, "call", "delegatecall", 0x0b, 0x0c, "0x9", []int{0}, ""),
		entry(txB, "call", "call", 0x0b, 0x0c, "0x2", []int{0, 0}, ""),
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Method != "trace_block" {
			t.Errorf("method %s", req.Method)
		}
		json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": req.ID, "result": traces})
	}))
	defer srv.Close()
	src, err := Dial(context.Background(), srv.URL, SourceConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	b := query.SourceBlock{Block: query.Block{Number: 0xb1, Hash: block}, Txs: []query.SourceTx{{Hash: txA}, {Hash: txB}}}
	got, err := src.Traces(context.Background(), b, query.TraceParity)
	if err != nil {
		t.Fatal(err)
	}
	want := []query.InternalMove{
		{TxHash: txA, Kind: query.KindInternal, From: addr(0x0b), To: addr(0x0c), Amount: query.AmountOf(5), CallType: "CALL", CallPath: "0"},
		{TxHash: txA, Kind: query.KindInternal, From: addr(0x0b), To: addr(0x0d), Amount: query.AmountOf(6), CallType: "CALL", CallPath: "1", Error: "Reverted"},
		{TxHash: txA, Kind: query.KindInternal, From: addr(0x0d), To: addr(0x0e), Amount: query.AmountOf(1), CallType: "CALL", CallPath: "1.0", Error: "Reverted"},
		{TxHash: txA, Kind: query.KindCreation, From: addr(0x0b), To: addr(0x0f), Amount: query.AmountOf(0), CallType: "CREATE", CallPath: "2"},
		{TxHash: txA, Kind: query.KindSelfdestruct, From: addr(0x0f), To: addr(0x10), Amount: query.AmountOf(3), CallType: "SELFDESTRUCT", CallPath: "3"},
		{TxHash: txB, Kind: query.KindTransaction, From: addr(0x0a), To: addr(0x0b), Amount: query.AmountOf(9), CallType: "CALL", Error: "Reverted"},
		{TxHash: txB, Kind: query.KindInternal, From: addr(0x0b), To: addr(0x0c), Amount: query.AmountOf(2), CallType: "CALL", CallPath: "0.0", Error: "Reverted"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
}
