package query

// Chains: the native coin of well-known networks (EVM and UTXO), how
// each charges fees and how far addrd's books on it have been proven,
// and the family that reads each.

import "strconv"

// NativeCoin is a chain's own currency, in which balances and fees are
// counted.
type NativeCoin struct {
	Symbol   string
	Decimals int
}

// Network is a well-known network.
type Network struct {
	// ID is the network's CAIP-2 chain ID: eip155:1,
	// bip122:000000000019d6689c085ae165831e93.
	ID string
	// Family is the chain family that reads it: FamilyEVM or FamilyUTXO.
	Family string
	// ChainID is an EVM network's EIP-155 chain ID; 0 on other families.
	ChainID uint64
	// Chain is the chain name that chooses the network's family on
	// addrd serve's --chain NAME=RPC_URL (BTC, LTCREGTEST); "" for the
	// EVM networks, since every name outside the table is an EVM chain's.
	Chain  string
	Name   string
	Native NativeCoin
	// Fees is the network's fee model (a Fees constant).
	Fees string
	// Exact says how far addrd's statements on it are proven (an Exact
	// constant); Note what that rests on: the node they were held to, the
	// movements addrd cannot see, or why the network is refused.
	Exact string
	Note  string
}

// Chain families.
const (
	FamilyEVM  = "evm"  // CAIP-2 namespace eip155
	FamilyUTXO = "utxo" // CAIP-2 namespace bip122
)

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
	// FeesUTXO: a transaction's inputs less its outputs, booked as a fee
	// only where one address (or one wallet) funded every input.
	FeesUTXO = "utxo"
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
// whose native coin is ether, the sidechains and L1s with their own, then
// the UTXO networks.
var networks = append([]Network{
	evmNet(1, "Ethereum", eth, FeesEthereum, ExactShown, noteGeth),
	evmNet(11155111, "Sepolia", eth, FeesEthereum, ExactShown, noteGeth),
	evmNet(17000, "Holesky", eth, FeesEthereum, ExactShown, noteGeth),
	evmNet(560048, "Hoodi", eth, FeesEthereum, ExactShown, noteGeth),
	evmNet(10, "OP Mainnet", eth, FeesOPStack, ExactShown, noteOPGeth+"; blocks before Bedrock (below 105,235,063) are not served by op-geth"),
	evmNet(11155420, "OP Sepolia", eth, FeesOPStack, ExactShown, noteOPGeth),
	evmNet(8453, "Base", eth, FeesOPStack, ExactShown, noteOPGeth),
	evmNet(84532, "Base Sepolia", eth, FeesOPStack, ExactShown, noteOPGeth),
	evmNet(42161, "Arbitrum One", eth, FeesArbitrum, ExactRules, noteArb),
	evmNet(42170, "Arbitrum Nova", eth, FeesArbitrum, ExactRules, noteArb),
	evmNet(421614, "Arbitrum Sepolia", eth, FeesArbitrum, ExactRules, noteArb),
	evmNet(324, "ZKsync Era", eth, FeesZKsync, ExactRefused, noteZKsync),
	evmNet(59144, "Linea", eth, FeesEthereum, ExactRules, noteRules),
	evmNet(534352, "Scroll", eth, FeesScroll, ExactRules, noteScroll),
	evmNet(81457, "Blast", eth, FeesOPStack, ExactUnseen, "native yield: ether balances of accounts that opt in grow each block with no transaction"),
	evmNet(7777777, "Zora", eth, FeesOPStack, ExactShown, noteOPGeth),
	evmNet(130, "Unichain", eth, FeesOPStack, ExactShown, noteOPGeth),
	evmNet(137, "Polygon PoS", pol, FeesEthereum, ExactUnseen, notePoly),
	evmNet(80002, "Polygon Amoy", pol, FeesEthereum, ExactUnseen, notePoly),
	evmNet(56, "BNB Smart Chain", bnb, FeesEthereum, ExactRules, noteRules+" (system transactions pay the validators at gas price 0)"),
	evmNet(97, "BNB Smart Chain Testnet", NativeCoin{"tBNB", 18}, FeesEthereum, ExactRules, noteRules+" (system transactions pay the validators at gas price 0)"),
	evmNet(43114, "Avalanche C-Chain", avax, FeesEthereum, ExactUnseen, noteAvax),
	evmNet(43113, "Avalanche Fuji", avax, FeesEthereum, ExactUnseen, noteAvax),
	evmNet(100, "Gnosis", NativeCoin{"XDAI", 18}, FeesEthereum, ExactUnseen, "bridged xDAI and block rewards credited by the block reward contract with no transaction"),
	evmNet(42220, "Celo", NativeCoin{"CELO", 18}, FeesOPStack, ExactUnseen, "CELO is also an ERC-20 whose transfers move native balances, and fees may be paid in other currencies"),
	evmNet(1337, "geth --dev / addrd dev chain", eth, FeesEthereum, ExactShown, noteGeth+" and on the in-process dev chain"),
	evmNet(31337, "Anvil / Hardhat", eth, FeesEthereum, ExactShown, "held to a real anvil (Foundry 1.7.1) in addrd's tests; Hardhat's node follows the same rules, unverified"),
	evmNet(901, "OP-stack devnet (op-geth)", eth, FeesOPStack, ExactShown, noteOPGeth),
}, utxoNetworks...)

// evmNet is a row of the table's EVM part.
func evmNet(id uint64, name string, native NativeCoin, fees, exact, note string) Network {
	return Network{ID: EIP155(id), Family: FamilyEVM, ChainID: id, Name: name, Native: native, Fees: fees, Exact: exact, Note: note}
}

// KnownNetwork returns the well-known EVM network of an EIP-155 chain ID.
func KnownNetwork(chainID uint64) (Network, bool) {
	for _, n := range networks {
		if n.Family == FamilyEVM && n.ChainID == chainID {
			return n, true
		}
	}
	return Network{}, false
}

// Networks returns the built-in table of well-known networks.
func Networks() []Network { return append([]Network(nil), networks...) }

// NetworkOf returns the well-known network of a CAIP-2 chain ID
// ("eip155:8453", "bip122:000000000019d6689c085ae165831e93"); ok false
// for one outside the table, evm false for a chain ID that is not EVM's
// (eip155).
func NetworkOf(chainID string) (n Network, ok, evm bool) {
	ns, ref, err := ParseChainID(chainID)
	if err != nil {
		return Network{}, false, false
	}
	if ns != "eip155" {
		for _, n := range networks {
			if n.ID == chainID {
				return n, true, false
			}
		}
		return Network{}, false, false
	}
	id, err := strconv.ParseUint(ref, 10, 64)
	if err != nil {
		return Network{}, false, true
	}
	n, ok = KnownNetwork(id)
	return n, ok, true
}

// NetworkNamed returns the network a chain name chooses on --chain
// (Network.Chain): false for a name outside the table, which is an EVM
// chain's.
func NetworkNamed(chain string) (Network, bool) {
	for _, n := range networks {
		if n.Chain != "" && n.Chain == chain {
			return n, true
		}
	}
	return Network{}, false
}
