package adversary_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/wharfhq/wharf/query/evm/adversary"
)

// get reads path of addrd's API as the stack's requester.
func (s *stack) get(path string, out any) {
	s.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, s.api+path, nil)
	id, secret, _ := strings.Cut(s.key, ":")
	req.SetBasicAuth(id, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		s.t.Fatalf("GET %s: %s", path, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		s.t.Fatal(err)
	}
}

type apiTransfer struct {
	LogIndex int    `json:"log_index"`
	Kind     string `json:"kind"`
	Asset    string `json:"asset"`
	Contract string `json:"contract"`
	TokenID  string `json:"token_id"`
	From     string `json:"from"`
	To       string `json:"to"`
	Amount   string `json:"amount"`
	CallType string `json:"call_type"`
	CallPath string `json:"call_path"`
	Error    string `json:"error"`
}

type apiTx struct {
	Hash       string        `json:"hash"`
	Status     string        `json:"status"`
	Input      string        `json:"input"`
	Cumulative uint64        `json:"cumulative_gas_used"`
	GasUsed    uint64        `json:"gas_used"`
	Revert     string        `json:"revert_reason"`
	Transfers  []apiTransfer `json:"transfers"`
}

func (s *stack) transactions(a common.Address) []apiTx {
	var page struct {
		Transactions []apiTx `json:"transactions"`
	}
	s.get("/v1/chains/"+chainName+"/addresses/"+strings.ToLower(a.Hex())+"/transactions?page_size=1000", &page)
	return page.Transactions
}

// TestTokensAndReverts, on the dev chain and on a real geth
// --dev: ERC-721 and ERC-1155 transfers (a TransferBatch of two ids) are
// listed with their token ids, held per collection (ERC-721, a count)
// and per id (ERC-1155) in /balances and the statement, which the
// checker holds to the node's balanceOf, and listed all together by
// contract=; a payout inside a call that
// reverted is listed with its error, type and path, moving nothing; a
// failed transaction says why (Error(string) decoded), with its input
// and cumulative gas.
func TestTokensAndReverts(t *testing.T) {
	for _, geth := range []bool{false, true} {
		t.Run(map[bool]string{false: "DevChain", true: "Geth"}[geth], func(t *testing.T) {
			s := newStack(t, run{seed: 15, geth: geth, traces: true, window: 1000})
			ctx := context.Background()
			to := s.gen.Candidates()[4] // a recipient without a key
			forwarder, reverter := s.gen.Contract("forwarder"), s.gen.Contract("reverter")
			nft, multi := strings.ToLower(s.gen.Contract("nft").Hex()), strings.ToLower(s.gen.Contract("multi").Hex())
			for _, a := range []common.Address{to, forwarder, reverter} {
				s.subscribe(a)
			}
			s.catchUp()
			s.act(adversary.ActERC721, to)
			s.act(adversary.ActERC1155, to)
			s.act(adversary.ActERC1155Batch, to)
			if err := s.gen.Seal(ctx); err != nil {
				t.Fatal(err)
			}
			s.act(adversary.ActERC721, to)
			s.act(adversary.ActERC1155Batch, to)
			s.act(adversary.ActBounce, to)
			s.act(adversary.ActFailedCall, reverter)
			head := s.catchUp()
			s.noViolations(head)

			kinds := make(map[string]int)
			for _, tx := range s.transactions(to) {
				if tx.Cumulative < tx.GasUsed || !strings.HasPrefix(tx.Input, "0x") || len(tx.Input) < 10 {
					t.Errorf("%s: cumulative_gas_used %d (gas_used %d), input %q", tx.Hash, tx.Cumulative, tx.GasUsed, tx.Input)
				}
				for _, tr := range tx.Transfers {
					switch {
					case tr.Asset == "erc721" && tr.Contract == nft && tr.TokenID != "" && tr.Amount == "1":
						kinds["erc721"]++
					case tr.Asset == "erc1155" && tr.Contract == multi && tr.TokenID != "" && tr.Kind == "token":
						kinds["erc1155"]++
					case tr.Error != "":
						t.Errorf("%s: a reverted call in an address's list: %+v", tx.Hash, tr)
					}
				}
			}
			if kinds["erc721"] < 1 || kinds["erc1155"] < 3 {
				t.Errorf("token transfers of the recipient: %v, want ERC-721 and ERC-1155 (a batch of two and a single)", kinds)
			}
			var bals struct {
				Balances []struct {
					Asset    string `json:"asset"`
					Contract string `json:"contract"`
					TokenID  string `json:"token_id"`
					Amount   string `json:"amount"`
				} `json:"balances"`
			}
			s.get("/v1/chains/"+chainName+"/addresses/"+strings.ToLower(to.Hex())+"/balances", &bals)
			held := make(map[string]int)
			for _, b := range bals.Balances {
				switch {
				case b.Asset == "erc721" && b.Contract == nft && b.TokenID == "" && b.Amount != "0":
					held["erc721"]++
				case b.Asset == "erc1155" && b.Contract == multi && b.TokenID != "":
					held["erc1155"]++
				}
			}
			if held["erc721"] != 1 || held["erc1155"] < 1 {
				t.Errorf("balances %+v: want the ERC-721 collection counted once, the ERC-1155 ids each", bals.Balances)
			}
			var rowsOf1155 int
			for _, r := range s.rows(to) {
				if r.Contract == multi && r.TokenID != "" {
					rowsOf1155++
				}
			}
			if rowsOf1155 == 0 {
				t.Errorf("no statement row of an ERC-1155 id: %+v", s.rows(to))
			}
			// contract= alone: the rows of every id of the contract.
			var byContract struct {
				Rows []adversary.Row `json:"balance_changes"`
			}
			s.get("/v1/chains/"+chainName+"/addresses/"+strings.ToLower(to.Hex())+"/balance_changes?page_size=1000&contract="+multi, &byContract)
			ids := map[string]bool{}
			for _, r := range byContract.Rows {
				ids[r.TokenID] = true
				if r.Contract != multi || r.TokenID == "" {
					t.Errorf("a row of contract=%s: %+v", multi, r)
				}
			}
			if len(byContract.Rows) != rowsOf1155 || len(ids) == 0 {
				t.Errorf("contract=%s: %d rows of ids %v, want the statement's %d rows of its ids", multi, len(byContract.Rows), ids, rowsOf1155)
			}

			var bounced bool
			for _, tx := range s.transactions(forwarder) {
				var full apiTx
				s.get("/v1/chains/"+chainName+"/transactions/"+tx.Hash, &full)
				for _, tr := range full.Transfers {
					if tr.To == strings.ToLower(to.Hex()) && tr.Kind == "internal" {
						bounced = true
						if tr.Error != "execution reverted" || tr.CallType != "CALL" || tr.CallPath != "0.0" {
							t.Errorf("the payout under the bouncer: %+v, want error execution reverted, CALL, path 0.0", tr)
						}
					}
				}
			}
			if !bounced {
				t.Errorf("the reverted payout is not listed in the forwarder's transactions")
			}
			var reasons []string
			for _, tx := range s.transactions(reverter) {
				if tx.Status == "failed" {
					reasons = append(reasons, tx.Revert)
				}
			}
			if len(reasons) != 1 || reasons[0] != adversary.RevertMessage {
				t.Errorf("revert reasons of the calls to the reverter: %q, want [%q]", reasons, adversary.RevertMessage)
			}
		})
	}
}
