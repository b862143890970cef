package evm

import (
	"math/big"
	"reflect"
	"testing"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/wharfhq/wharf/query"
)

func addrTopic(a string) common.Hash { return common.BytesToHash(common.HexToAddress(a).Bytes()) }

func words(ns ...int64) []byte {
	var out []byte
	for _, n := range ns {
		out = append(out, common.LeftPadBytes(big.NewInt(n).Bytes(), 32)...)
	}
	return out
}

// TestAppendTransfers: each kind of token log gives its transfers (an
// ERC-1155 batch one an id, all with the log's index); malformed logs
// give none.
func TestAppendTransfers(t *testing.T) {
	const (
		c    = "0x00000000000000000000000000000000000000cc"
		from = "0x00000000000000000000000000000000000000f1"
		to   = "0x00000000000000000000000000000000000000f2"
		op   = "0x00000000000000000000000000000000000000aa"
	)
	maxID := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1))
	base := query.TokenTransfer{BlockNumber: 5, BlockHash: hexLower(common.Hash{5}), TxHash: hexLower(common.Hash{9}), TxIndex: 1,
		LogIndex: 3, Contract: c, From: from, To: to}
	with := func(asset, id, amount string) query.TokenTransfer {
		t := base
		t.Asset, t.TokenID, t.Amount = asset, id, query.MustParseAmount(amount)
		return t
	}
	batch := append(words(64, 64+32*4, 3, 1, 2, 3, 3), words(10, 20, 30)...)
	for _, tt := range []struct {
		name   string
		topics []common.Hash
		data   []byte
		want   []query.TokenTransfer
	}{
		{"ERC20", []common.Hash{transferTopic, addrTopic(from), addrTopic(to)}, words(77), []query.TokenTransfer{with(query.AssetERC20, "", "77")}},
		{"ERC721", []common.Hash{transferTopic, addrTopic(from), addrTopic(to), common.BigToHash(maxID)}, nil,
			[]query.TokenTransfer{with(query.AssetERC721, maxID.String(), "1")}},
		{"ERC721WithData", []common.Hash{transferTopic, addrTopic(from), addrTopic(to), common.BigToHash(big.NewInt(1))}, words(1), nil},
		{"ERC20ShortData", []common.Hash{transferTopic, addrTopic(from), addrTopic(to)}, words(1)[:31], nil},
		{"Single", []common.Hash{transferSingleTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, words(42, 5),
			[]query.TokenTransfer{with(query.AssetERC1155, "42", "5")}},
		{"SingleShort", []common.Hash{transferSingleTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, words(42), nil},
		{"SingleTopics", []common.Hash{transferSingleTopic, addrTopic(op), addrTopic(from)}, words(42, 5), nil},
		{"Batch", []common.Hash{transferBatchTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, batch,
			[]query.TokenTransfer{with(query.AssetERC1155, "1", "10"), with(query.AssetERC1155, "2", "20"), with(query.AssetERC1155, "3", "30")}},
		{"BatchLengths", []common.Hash{transferBatchTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, append(words(64, 64+32*3, 2, 1, 2, 3), words(10, 20, 30)...), nil},
		{"BatchOffset", []common.Hash{transferBatchTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, words(1<<40, 64), nil},
		{"BatchCount", []common.Hash{transferBatchTopic, addrTopic(op), addrTopic(from), addrTopic(to)}, words(64, 96, 1<<40), nil},
		{"Other", []common.Hash{common.Hash{1}, addrTopic(from), addrTopic(to)}, words(1), nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			l := &types.Log{Address: common.HexToAddress(c), Topics: tt.topics, Data: tt.data, BlockNumber: 5, BlockHash: common.Hash{5},
				TxHash: common.Hash{9}, TxIndex: 1, Index: 3}
			got := appendTransfers(nil, l)
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// FuzzAppendTransfers: no log data makes the decoder panic, and every
// transfer it gives has a decimal amount and token id.
func FuzzAppendTransfers(f *testing.F) {
	f.Add(append(words(64, 64+32*4, 3, 1, 2, 3, 3), words(10, 20, 30)...), true)
	f.Add(words(42, 5), false)
	f.Fuzz(func(t *testing.T, data []byte, isBatch bool) {
		topic := transferSingleTopic
		if isBatch {
			topic = transferBatchTopic
		}
		l := &types.Log{Topics: []common.Hash{topic, {}, {1}, {2}}, Data: data}
		for _, tr := range appendTransfers(nil, l) {
			if _, ok := new(big.Int).SetString(tr.TokenID, 10); !ok {
				t.Fatalf("token id %q", tr.TokenID)
			}
		}
	})
}

// TestRevertReason: Error(string) and Panic(uint256) decoded, anything
// else raw, no data the EVM's error.
func TestRevertReason(t *testing.T) {
	errorData := append(hexutil.MustDecode("0x08c379a0"), words(32, 12)...)
	errorData = append(errorData, common.RightPadBytes([]byte("not allowed!"), 32)...)
	for _, tt := range []struct {
		name, err string
		data      []byte
		want      string
	}{
		{"Error", "execution reverted", errorData, "not allowed!"},
		{"Panic", "execution reverted", append(hexutil.MustDecode("0x4e487b71"), words(0x11)...), "Panic(0x11): arithmetic underflow or overflow"},
		{"PanicUnknown", "execution reverted", append(hexutil.MustDecode("0x4e487b71"), words(0x99)...), "Panic(0x99)"},
		{"Custom", "execution reverted", hexutil.MustDecode("0xdeadbeef01"), "0xdeadbeef01"},
		{"ErrorBad", "execution reverted", append(hexutil.MustDecode("0x08c379a0"), words(32, 99)...), "0x08c379a0" + common.Bytes2Hex(words(32, 99))},
		{"NoData", "out of gas", nil, "out of gas"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := RevertReason(tt.err, tt.data); got != tt.want {
				t.Fatalf("RevertReason = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestWalkFrames: internal movements carry their call type and path;
// a reverted call and all under it are listed with the error, a
// delegate call is a step of the path that moves nothing.
func TestWalkFrames(t *testing.T) {
	a := func(n byte) *common.Address { x := common.Address{n}; return &x }
	v := func(n int64) *hexutil.Big { return (*hexutil.Big)(big.NewInt(n)) }
	frames := []callFrame{
		{Type: "DELEGATECALL", From: common.Address{1}, To: a(2), Calls: []callFrame{
			{Type: "CALL", From: common.Address{1}, To: a(3), Value: v(5)},
			{Type: "STATICCALL", From: common.Address{1}, To: a(4)},
			{Type: "CALL", From: common.Address{1}, To: a(5), Value: v(6), Error: "execution reverted",
				Output: rawOutput(`"` + hexutil.Encode(append(hexutil.MustDecode("0x4e487b71"), words(1)...)) + `"`), Calls: []callFrame{
					{Type: "CREATE2", From: common.Address{5}, To: a(6), Value: v(0)},
					{Type: "CALL", From: common.Address{5}, To: a(7), Value: v(1)},
				}},
		}},
		{Type: "CALL", From: common.Address{1}, To: a(8), Value: v(9)},
	}
	got := walkFrames(nil, "0xh", nil, "", frames, make(map[string]bool))
	lo := func(n byte) string { return addrLower(common.Address{n}) }
	panicked := "Panic(0x1): assertion failed"
	want := []query.InternalMove{
		{TxHash: "0xh", Kind: query.KindInternal, From: lo(1), To: lo(3), Amount: query.AmountOf(5), CallType: "CALL", CallPath: "0.0"},
		{TxHash: "0xh", Kind: query.KindInternal, From: lo(1), To: lo(5), Amount: query.AmountOf(6), CallType: "CALL", CallPath: "0.2", Error: panicked},
		{TxHash: "0xh", Kind: query.KindCreation, From: lo(5), To: lo(6), Amount: query.AmountOf(0), CallType: "CREATE2", CallPath: "0.2.0", Error: panicked},
		{TxHash: "0xh", Kind: query.KindInternal, From: lo(5), To: lo(7), Amount: query.AmountOf(1), CallType: "CALL", CallPath: "0.2.1", Error: panicked},
		{TxHash: "0xh", Kind: query.KindInternal, From: lo(1), To: lo(8), Amount: query.AmountOf(9), CallType: "CALL", CallPath: "1"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%+v\nwant\n%+v", got, want)
	}
	if tracePath([]int{0, 2, 1}) != "0.2.1" || tracePath(nil) != "" {
		t.Fatal("tracePath")
	}
}
