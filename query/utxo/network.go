package utxo

import (
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
)

// Network is a UTXO network: the prefixes its addresses and extended
// keys are written with, and the genesis block that identifies it.
type Network struct {
	// Name is the network's name, such as "bitcoin" or "litecoin-regtest".
	Name string
	// Coin is the native coin's symbol (BTC, LTC); amounts are counted in
	// its smallest unit, 10^-8 of a coin.
	Coin string
	// Genesis is the hash of the genesis block, 64 hex digits as the
	// node writes it (big-endian).
	Genesis string
	// Params holds the prefixes, in the shape btcd's packages take:
	// Bech32HRPSegwit, PubKeyHashAddrID, ScriptHashAddrID,
	// HDPublicKeyID and HDPrivateKeyID. A network other than Bitcoin's
	// is never registered with chaincfg: it is passed where needed.
	Params *chaincfg.Params
	// LegacyScriptHashAddrID is a second P2SH version byte the network
	// still accepts (Litecoin's 5, "3..."); 0 when none. Such addresses
	// are read, and written in ScriptHashAddrID's form.
	LegacyScriptHashAddrID byte
}

// Decimals is the number of decimals of every UTXO coin here: amounts
// are integers of 10^-8 coin (satoshi, litoshi).
const Decimals = 8

// ID is the network's CAIP-2 chain identity: bip122: and the first 32
// hex digits of its genesis block's hash.
func (n *Network) ID() string { return "bip122:" + n.Genesis[:32] }

// String is the network's name.
func (n *Network) String() string { return n.Name }

// Networks returns the networks the family knows: Bitcoin's mainnet,
// testnet3, testnet4, signet and regtest, Litecoin's mainnet, testnet4
// and regtest.
func Networks() []*Network {
	return []*Network{
		btc("bitcoin", &chaincfg.MainNetParams),
		btc("bitcoin-testnet3", &chaincfg.TestNet3Params),
		btc("bitcoin-testnet4", &chaincfg.TestNet4Params),
		btc("bitcoin-signet", &chaincfg.SigNetParams),
		btc("bitcoin-regtest", &chaincfg.RegressionNetParams),
		ltc("litecoin", "12a765e31ffd4059bada1e25190f6e98c99d9714d334efa41a195a7e7e04bfe2",
			"ltc", 0x30, 0x32, 0x05, [4]byte{0x04, 0x88, 0xb2, 0x1e}, [4]byte{0x04, 0x88, 0xad, 0xe4}),
		ltc("litecoin-testnet4", "4966625a4b2851d9fdee139e56211a0d88575f59ed816ff5e6a63deb4e3e29a0",
			"tltc", 0x6f, 0x3a, 0xc4, [4]byte{0x04, 0x35, 0x87, 0xcf}, [4]byte{0x04, 0x35, 0x83, 0x94}),
		ltc("litecoin-regtest", "530827f38f93b43ed12af0b3ad25a288dc02ed74d6d7857862df51fc56c416f9",
			"rltc", 0x6f, 0x3a, 0xc4, [4]byte{0x04, 0x35, 0x87, 0xcf}, [4]byte{0x04, 0x35, 0x83, 0x94}),
	}
}

// btc is a Bitcoin network from btcd's own parameters.
func btc(name string, p *chaincfg.Params) *Network {
	return &Network{Name: name, Coin: "BTC", Genesis: p.GenesisHash.String(), Params: p}
}

// ltc is a Litecoin network: Litecoin Core's chainparams.cpp.
func ltc(name, genesis, hrp string, pkh, sh, legacySH byte, xpub, xprv [4]byte) *Network {
	h, err := chainhash.NewHashFromStr(genesis)
	if err != nil {
		panic(err) // a literal above
	}
	return &Network{Name: name, Coin: "LTC", Genesis: genesis, LegacyScriptHashAddrID: legacySH,
		Params: &chaincfg.Params{Name: name, GenesisHash: h, Bech32HRPSegwit: hrp,
			PubKeyHashAddrID: pkh, ScriptHashAddrID: sh, HDPublicKeyID: xpub, HDPrivateKeyID: xprv}}
}

// NetworkByGenesis returns the network whose genesis block has the hash
// genesis (64 hex digits, any case), as a node's getblockhash 0 says.
func NetworkByGenesis(genesis string) (*Network, error) {
	g := strings.ToLower(genesis)
	for _, n := range Networks() {
		if n.Genesis == g {
			return n, nil
		}
	}
	return nil, fmt.Errorf("genesis block %s: not a network this family knows (bitcoin, litecoin and their test networks)", genesis)
}

// NetworkByName returns the network called name (Network.Name).
func NetworkByName(name string) (*Network, error) {
	var names []string
	for _, n := range Networks() {
		if n.Name == name {
			return n, nil
		}
		names = append(names, n.Name)
	}
	return nil, fmt.Errorf("network %q: not one of %s", name, strings.Join(names, ", "))
}

// NetworkByID returns the network of a CAIP-2 chain ID (Network.ID).
func NetworkByID(id string) (*Network, error) {
	for _, n := range Networks() {
		if n.ID() == id {
			return n, nil
		}
	}
	return nil, fmt.Errorf("chain ID %q: not a network this family knows (bitcoin, litecoin and their test networks)", id)
}
