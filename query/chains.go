package query

// Chains: the native coin of well-known EVM networks, and the check that
// the node behind a chain name is still the network the database holds.

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
}

var (
	eth  = NativeCoin{"ETH", 18}
	pol  = NativeCoin{"POL", 18}
	bnb  = NativeCoin{"BNB", 18}
	avax = NativeCoin{"AVAX", 18}
)

// networks is the built-in table: Ethereum and its testnets, the L2s
// whose native coin is ether, and the sidechains and L1s with their own.
var networks = []Network{
	{1, "Ethereum", eth},
	{11155111, "Sepolia", eth},
	{17000, "Holesky", eth},
	{560048, "Hoodi", eth},
	{10, "OP Mainnet", eth},
	{11155420, "OP Sepolia", eth},
	{8453, "Base", eth},
	{84532, "Base Sepolia", eth},
	{42161, "Arbitrum One", eth},
	{42170, "Arbitrum Nova", eth},
	{421614, "Arbitrum Sepolia", eth},
	{324, "ZKsync Era", eth},
	{59144, "Linea", eth},
	{534352, "Scroll", eth},
	{81457, "Blast", eth},
	{7777777, "Zora", eth},
	{130, "Unichain", eth},
	{137, "Polygon PoS", pol},
	{80002, "Polygon Amoy", pol},
	{56, "BNB Smart Chain", bnb},
	{97, "BNB Smart Chain Testnet", NativeCoin{"tBNB", 18}},
	{43114, "Avalanche C-Chain", avax},
	{43113, "Avalanche Fuji", avax},
	{100, "Gnosis", NativeCoin{"XDAI", 18}},
	{42220, "Celo", NativeCoin{"CELO", 18}},
	{1337, "geth --dev / addrd dev chain", eth},
	{31337, "Anvil / Hardhat", eth},
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
