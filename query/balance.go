package query

import (
	"strings"
	"time"
)

// Assets of a balance or transfer.
const (
	AssetNative  = "native"  // the chain's own currency (ETH)
	AssetERC20   = "erc20"   // an ERC-20 token, named by its contract
	AssetERC721  = "erc721"  // an ERC-721 collection: its amounts count tokens
	AssetERC1155 = "erc1155" // one token id of an ERC-1155 contract
)

// IsToken reports whether asset is held through a token contract.
func IsToken(asset string) bool {
	return asset == AssetERC20 || asset == AssetERC721 || asset == AssetERC1155
}

// A holding of a token is named by its contract, except that each id of
// an ERC-1155 contract is an asset of its own (its balanceOf takes the
// id): its key is "contract/id", the id in decimal. Statement rows,
// heads, balances and balance queries carry that key in their Contract;
// the API writes it as contract and token_id.

// HoldingKey is the key of the holding of a token: the contract, or
// contract/id for an ERC-1155 id.
func HoldingKey(asset, contract, tokenID string) string {
	if asset == AssetERC1155 {
		return contract + "/" + tokenID
	}
	return contract
}

// SplitHoldingKey splits a holding key into the contract and the
// ERC-1155 token id ("" when it names a whole contract).
func SplitHoldingKey(key string) (contract, tokenID string) {
	contract, tokenID, _ = strings.Cut(key, "/")
	return contract, tokenID
}

// Balance is an amount of one asset held by an address, as read at a block.
type Balance struct {
	Chain    string
	Address  string
	Asset    string // AssetNative, AssetERC20, AssetERC721 or AssetERC1155
	Contract string // token contract (a holding key: contract/id for ERC-1155); "" for native
	Symbol   string
	Name     string // the token's name(); "" for native or when it does not say
	Decimals int
	Amount   Amount    // in the asset's smallest unit (a count for ERC-721)
	Block    uint64    // block the amount was read at
	Updated  time.Time // when it was read
}
