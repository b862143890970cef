package query

// The UTXO part of the table of networks: Bitcoin's and Litecoin's, each
// chosen on --chain by its name.

var (
	btc = NativeCoin{"BTC", 8}
	ltc = NativeCoin{"LTC", 8}
)

const (
	noteBTC = "Bitcoin's rules for outputs, inputs, fees and coinbase maturity; held to a real btcd in regtest in addrd's tests (the statements against its unspent outputs at the tip, under random activity and reorgs)"
	noteLTC = "Bitcoin's rules (Litecoin Core is a Bitcoin Core fork); held to a real litecoind (Litecoin Core 0.21) in regtest in addrd's tests (the statements against its unspent outputs at the tip, under random activity and reorgs)"
)

// utxoNetworks are the UTXO networks: their IDs are bip122: and the first
// 32 hex digits of the genesis block's hash (query/utxo's Networks holds
// the whole hashes and the address prefixes).
var utxoNetworks = []Network{
	utxoNet("bip122:000000000019d6689c085ae165831e93", "BTC", "Bitcoin", btc, ExactShown, noteBTC),
	utxoNet("bip122:000000000933ea01ad0ee984209779ba", "BTCTESTNET3", "Bitcoin testnet3", NativeCoin{"tBTC", 8}, ExactShown, noteBTC),
	utxoNet("bip122:00000000da84f2bafbbc53dee25a72ae", "BTCTESTNET4", "Bitcoin testnet4", NativeCoin{"tBTC", 8}, ExactShown, noteBTC),
	utxoNet("bip122:00000008819873e925422c1ff0f99f7c", "BTCSIGNET", "Bitcoin signet", NativeCoin{"sBTC", 8}, ExactShown, noteBTC),
	utxoNet("bip122:0f9188f13cb7b2c71f2a335e3a4fc328", "BTCREGTEST", "Bitcoin regtest", btc, ExactShown, noteBTC),
	utxoNet("bip122:12a765e31ffd4059bada1e25190f6e98", "LTC", "Litecoin", ltc, ExactShown, noteLTC),
	utxoNet("bip122:4966625a4b2851d9fdee139e56211a0d", "LTCTESTNET4", "Litecoin testnet4", NativeCoin{"tLTC", 8}, ExactShown, noteLTC),
	utxoNet("bip122:530827f38f93b43ed12af0b3ad25a288", "LTCREGTEST", "Litecoin regtest", ltc, ExactShown, noteLTC),
}

func utxoNet(id, chain, name string, native NativeCoin, exact, note string) Network {
	return Network{ID: id, Family: FamilyUTXO, Chain: chain, Name: name, Native: native, Fees: FeesUTXO, Exact: exact, Note: note}
}
