package api

import (
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query"
)

// TestAppendBalancesJSON: the hand-written balances body is byte for
// byte json.Marshal's of the balancesBody toBalance makes, for random
// balances whose strings need escaping now and then (quotes, HTML,
// control bytes, invalid UTF-8, U+2028), ERC-1155 holding keys, zero and
// uint256-sized amounts, zero and other update times. The seed is
// printed on failure.
func TestAppendBalancesJSON(t *testing.T) {
	rng := testenv.Rand(t, 26)
	odd := []string{"", "ETH", "0x" + "ab12", `q"b\`, "<a>&", "\t\n\x00\x7f", "é日本🙂", "\u2028", "bad \xff", "T/1"}
	str := func() string { return odd[rng.IntN(len(odd))] }
	for n := range 200 {
		bs := make([]query.Balance, n%7)
		for i := range bs {
			amount := new(big.Int).Lsh(big.NewInt(rng.Int64()), uint(rng.IntN(200)))
			bs[i] = query.Balance{Asset: str(), Contract: str(), Symbol: str(), Name: str(), Decimals: rng.IntN(40) - 2,
				Amount: query.AmountFromBig(amount), Block: rng.Uint64()}
			if rng.IntN(2) == 0 {
				bs[i].Contract += "/" + str()
			}
			if rng.IntN(4) > 0 {
				bs[i].Updated = time.Unix(rng.Int64N(1<<34), 0).In(time.FixedZone("X", 3600))
			}
		}
		immature := make([]*query.Amount, len(bs))
		body := balancesBody{Balances: make([]balance, len(bs))}
		for i, b := range bs {
			if rng.IntN(3) == 0 {
				immature[i] = ptr(query.AmountFromBig(new(big.Int).Lsh(big.NewInt(rng.Int64()), uint(rng.IntN(100)))))
			}
			body.Balances[i] = toBalance(b, immature[i])
		}
		want, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendBalances(nil, bs, immature); string(got) != string(want) {
			t.Fatalf("%d balances:\n got %s\nwant %s", len(bs), got, want)
		}
	}
}
