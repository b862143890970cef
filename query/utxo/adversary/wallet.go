package adversary

import (
	"bytes"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/wharfhq/wharf/query/utxo"
)

// Script kinds a key pays to.
const (
	P2WPKH = "p2wpkh"
	P2PKH  = "p2pkh"
	P2TR   = "p2tr" // BIP 86 key path
)

// Key is a key of the generator's wallet and the address it is paid at.
type Key struct {
	Kind    string
	Address utxo.Address
	priv    *btcec.PrivateKey
}

// newKey makes the key of secret (32 bytes) paying to kind on net.
func newKey(net *utxo.Network, kind string, secret []byte) (*Key, error) {
	priv, pub := btcec.PrivKeyFromBytes(secret)
	var script []byte
	switch kind {
	case P2WPKH:
		script = append([]byte{txscript.OP_0, txscript.OP_DATA_20}, address.Hash160(pub.SerializeCompressed())...)
	case P2PKH:
		script = append([]byte{txscript.OP_DUP, txscript.OP_HASH160, txscript.OP_DATA_20}, address.Hash160(pub.SerializeCompressed())...)
		script = append(script, txscript.OP_EQUALVERIFY, txscript.OP_CHECKSIG)
	case P2TR:
		script = append([]byte{txscript.OP_1, txscript.OP_DATA_32}, schnorr.SerializePubKey(txscript.ComputeTaprootKeyNoScript(pub))...)
	default:
		return nil, fmt.Errorf("key kind %q", kind)
	}
	a, err := utxo.AddressFromScript(net, script)
	if err != nil {
		return nil, fmt.Errorf("%s address: %w", kind, err)
	}
	return &Key{Kind: kind, Address: a, priv: priv}, nil
}

// Coin is an unspent output: what the node says of it.
type Coin struct {
	Outpoint utxo.Outpoint
	Address  string
	Value    int64
	Height   uint64 // the block it was made in; 0 while in the mempool
	Coinbase bool
}

// sign signs tx, whose inputs spend coins in order, with the keys that
// own them, and returns it serialised in hex.
func sign(tx *wire.MsgTx, coins []Coin, keys map[string]*Key) (string, error) {
	prev := make(map[wire.OutPoint]*wire.TxOut, len(coins))
	for i, c := range coins {
		k := keys[c.Address]
		if k == nil {
			return "", fmt.Errorf("no key for %s", c.Address)
		}
		prev[tx.TxIn[i].PreviousOutPoint] = wire.NewTxOut(c.Value, k.Address.Script)
	}
	hashes := txscript.NewTxSigHashes(tx, txscript.NewMultiPrevOutFetcher(prev))
	for i, c := range coins {
		k := keys[c.Address]
		var err error
		switch k.Kind {
		case P2WPKH:
			tx.TxIn[i].Witness, err = txscript.WitnessSignature(tx, hashes, i, c.Value, k.Address.Script, txscript.SigHashAll, k.priv, true)
		case P2PKH:
			tx.TxIn[i].SignatureScript, err = txscript.SignatureScript(tx, i, k.Address.Script, txscript.SigHashAll, k.priv, true)
		case P2TR:
			tx.TxIn[i].Witness, err = txscript.TaprootWitnessSignature(tx, hashes, i, c.Value, k.Address.Script, txscript.SigHashDefault, k.priv)
		}
		if err != nil {
			return "", fmt.Errorf("sign input %d (%s): %w", i, k.Kind, err)
		}
	}
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf.Bytes()), nil
}
