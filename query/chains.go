package query

// Chains: the native coin of well-known EVM networks, how each charges
// fees and how far addrd's books on it have been proven, and the check
// that the node behind a chain name is still the network the database
// holds.

import "strconv"

// NativeCoin is a chain's own currency, in which balances and fees are
// counted.
type NativeCoin struct {
	Symbol   string
	Decimals int
}

// Network is a well-known EVM network.
type Network struct {
	ChainID uint64
	Name    string
	Native  NativeCoin
	// Fees is the network's fee model (a Fees constant).
	Fees string
	// Exact says how far addrd's statements on it are proven (an Exact
	// constant); Note what that rests on: the node they were held to, the
	// movements addrd cannot see, or why the network is refused.
	Exact string
	Note  string
}

// Fee models: what a transaction's sender pays (FeeParts).
const (
	// FeesEthereum: gasUsed × effectiveGasPrice, plus blob gas.
	FeesEthereum = "ethereum"
	// FeesOPStack: execution plus the L1 data fee (the receipt's l1Fee)
	// and the operator fee (Isthmus); deposits (type 0x7e) mint to their
	// sender and pay nothing.
	FeesOPStack = "op-stack"
	// FeesArbitrum: gasUsed × effectiveGasPrice, the L1 cost counted in
	// gasUsed.
	FeesArbitrum = "arbitrum"
	// FeesScroll: execution plus the L1 data fee (the receipt's l1Fee).
	FeesScroll = "scroll"
	// FeesZKsync: fees charged up front and refunded in part by system
	// contracts, ether held as a system contract's token.
	FeesZKsync = "zksync"
)

// How far addrd's books on a network are proven.
const (
	// ExactShown: statements held to the wei against a real node of this
	// kind in addrd's own tests (Note names it).
	ExactShown = "shown_exact"
	// ExactRules: follows rules addrd applies, not verified against a
	// node here.
	ExactRules = "known_rules"
	// ExactUnseen: balances also move in ways no transaction explains,
	// which addrd cannot see (Note says which): such a statement shows
	// them as differences against the node.
	ExactUnseen = "unseen_movements"
	// ExactRefused: addrd refuses to fetch it (Note says why).
	ExactRefused = "refused"
)

var (
	eth  = NativeCoin{"ETH", 18}
	pol  = NativeCoin{"POL", 18}
	bnb  = NativeCoin{"BNB", 18}
	avax = NativeCoin{"AVAX", 18}
)

// Notes shared by several networks.
const (
	noteGeth   = "held to a real geth --dev (go-ethereum) in addrd's tests"
	noteOPGeth = "held to a real op-geth (Bedrock to Isthmus) in addrd's tests; Jovian's operator fee formula (× 100) follows the OP specification, unverified"
	noteRules  = "Ethereum's rules; not run against this network's node here"
	noteArb    = "execution fee as Ethereum's (the L1 cost is in gasUsed); ETH deposits (type 0x64) and retryable tickets (0x68, 0x69) not verified"
	noteScroll = "the receipt's l1Fee added as on OP-stack chains; not run against a Scroll node here"
	notePoly   = "state-sync deposits from Ethereum (the bridge's native and token credits by system calls with no transaction)"
	noteAvax   = "atomic imports and exports with the X- and P-Chain (credits in the block's extra data, with no transaction)"
	noteZKsync = "ZKsync Era refunds part of each fee after the transaction and keeps ether as a system contract's token balance, outside the EVM rules addrd applies: its statements would not add up, so it is refused"
)

// networks is the built-in table: Ethereum and its testnets, the L2s
// whose native coin is ether, and the sidechains and L1s with their own.
var networks = []Network{
	{1, "Ethereum", eth, FeesEthereum, ExactShown, noteGeth},
	{11155111, "Sepolia", eth, FeesEthereum, ExactShown, noteGeth},
	{17000, "Holesky", eth, FeesEthereum, ExactShown, noteGeth},
	{560048, "Hoodi", eth, FeesEthereum, ExactShown, noteGeth},
	{10, "OP Mainnet", eth, FeesOPStack, ExactShown, noteOPGeth + "; blocks before Bedrock (below 105,235,063) are not served by op-geth"},
	{11155420, "OP Sepolia", eth, FeesOPStack, ExactShown, noteOPGeth},
	{8453, "Base", eth, FeesOPStack, ExactShown, noteOPGeth},
	{84532, "Base Sepolia", eth, FeesOPStack, ExactShown, noteOPGeth},
	{42161, "Arbitrum One", eth, FeesArbitrum, ExactRules, noteArb},
	{42170, "Arbitrum Nova", eth, FeesArbitrum, ExactRules, noteArb},
	{421614, "Arbitrum Sepolia", eth, FeesArbitrum, ExactRules, noteArb},
	{324, "ZKsync Era", eth, FeesZKsync, ExactRefused, noteZKsync},
	{59144, "Linea", eth, FeesEthereum, ExactRules, noteRules},
	{534352, "Scroll", eth, FeesScroll, ExactRules, noteScroll},
	{81457, "Blast", eth, FeesOPStack, ExactUnseen, "native yield: ether balances of accounts that opt in grow each block with no transaction"},
	{7777777, "Zora", eth, FeesOPStack, ExactShown, noteOPGeth},
	{130, "Unichain", eth, FeesOPStack, ExactShown, noteOPGeth},
	{137, "Polygon PoS", pol, FeesEthereum, ExactUnseen, notePoly},
	{80002, "Polygon Amoy", pol, FeesEthereum, ExactUnseen, notePoly},
	{56, "BNB Smart Chain", bnb, FeesEthereum, ExactRules, noteRules + " (system transactions pay the validators at gas price 0)"},
	{97, "BNB Smart Chain Testnet", NativeCoin{"tBNB", 18}, FeesEthereum, ExactRules, noteRules + " (system transactions pay the validators at gas price 0)"},
	{43114, "Avalanche C-Chain", avax, FeesEthereum, ExactUnseen, noteAvax},
	{43113, "Avalanche Fuji", avax, FeesEthereum, ExactUnseen, noteAvax},
	{100, "Gnosis", NativeCoin{"XDAI", 18}, FeesEthereum, ExactUnseen, "bridged xDAI and block rewards credited by the block reward contract with no transaction"},
	{42220, "Celo", NativeCoin{"CELO", 18}, FeesOPStack, ExactUnseen, "CELO is also an ERC-20 whose transfers move native balances, and fees may be paid in other currencies"},
	{1337, "geth --dev / addrd dev chain", eth, FeesEthereum, ExactShown, noteGeth + " and on the in-process dev chain"},
	{31337, "Anvil / Hardhat", eth, FeesEthereum, ExactShown, "held to a real anvil (Foundry 1.7.1) in addrd's tests; Hardhat's node follows the same rules, unverified"},
	{901, "OP-stack devnet (op-geth)", eth, FeesOPStack, ExactShown, noteOPGeth},
}

// KnownNetwork returns the well-known network of a chain ID.
func KnownNetwork(chainID uint64) (Network, bool) {
	for _, n := range networks {
		if n.ChainID == chainID {
			return n, true
		}
	}
	return Network{}, false
}

// Networks returns the built-in table of well-known networks.
func Networks() []Network { return append([]Network(nil), networks...) }

// NetworkOf returns the well-known network of a CAIP-2 chain ID
// ("eip155:8453"); ok false for one outside the table, evm false for a
// chain ID that is not EVM's (eip155).
func NetworkOf(chainID string) (n Network, ok, evm bool) {
	ns, ref, err := ParseChainID(chainID)
	if err != nil || ns != "eip155" {
		return Network{}, false, false
	}
	id, err := strconv.ParseUint(ref, 10, 64)
	if err != nil {
		return Network{}, false, true
	}
	n, ok = KnownNetwork(id)
	return n, ok, true
}
