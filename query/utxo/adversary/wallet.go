package adversary

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

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
	P2TR   = "p2tr"  // BIP 86 key path
	P2WSH  = "p2wsh" // 2-of-3 sortedmulti
)

// Key is a key of the generator's wallet and the address it is paid at.
type Key struct {
	Kind    string
	Address utxo.Address
	priv    *btcec.PrivateKey
	// A multisig's: its witness script and keys in the script's order.
	script []byte
	privs  []*btcec.PrivateKey
}

// newKey makes the key of secrets (32 bytes each; three for P2WSH, one
// for the others) paying to kind on net.
func newKey(net *utxo.Network, kind string, secrets ...[]byte) (*Key, error) {
	priv, pub := btcec.PrivKeyFromBytes(secrets[0])
	k := &Key{Kind: kind, priv: priv}
	var script []byte
	switch kind {
	case P2WSH:
		for _, s := range secrets {
			p, _ := btcec.PrivKeyFromBytes(s)
			k.privs = append(k.privs, p)
		}
		// sortedmulti: the keys in the order of their serialisation.
		slices.SortFunc(k.privs, func(a, b *btcec.PrivateKey) int {
			return bytes.Compare(a.PubKey().SerializeCompressed(), b.PubKey().SerializeCompressed())
		})
		b := txscript.NewScriptBuilder().AddOp(txscript.OP_2)
		for _, p := range k.privs {
			b.AddData(p.PubKey().SerializeCompressed())
		}
		ws, err := b.AddOp(txscript.OP_3).AddOp(txscript.OP_CHECKMULTISIG).Script()
		if err != nil {
			return nil, err
		}
		h := sha256.Sum256(ws)
		k.script, script = ws, append([]byte{txscript.OP_0, txscript.OP_DATA_32}, h[:]...)
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
	k.Address = a
	return k, nil
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
		case P2WSH:
			// Two of the three, in the script's order; the empty first
			// item is CHECKMULTISIG's extra pop.
			w := wire.TxWitness{nil}
			for _, p := range k.privs[:2] {
				sig, err := txscript.RawTxInWitnessSignature(tx, hashes, i, c.Value, k.script, txscript.SigHashAll, p)
				if err != nil {
					return "", fmt.Errorf("sign input %d (%s): %w", i, k.Kind, err)
				}
				w = append(w, sig)
			}
			tx.TxIn[i].Witness = append(w, k.script)
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
