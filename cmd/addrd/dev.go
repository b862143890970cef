package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/wharfhq/wharf/internal/shell"
	"github.com/wharfhq/wharf/query"
	"github.com/wharfhq/wharf/query/evm/devchain"
	"github.com/wharfhq/wharf/query/store"
	"github.com/wharfhq/wharf/query/utxo/devnode"
)

// devBTC is the chain name of --dev's Bitcoin regtest node.
const devBTC = "BTCREGTEST"

// devChain is the --dev chain, the Bitcoin regtest node beside it when
// btcd is installed, and the temporary database beside them.
type devChain struct {
	dev *devchain.Chain
	btc *devnode.Node // nil without btcd
	dir string        // removed at close; "" when --db was given
}

// startDevChain starts the in-process chain when --dev is set and returns
// the chains with ETH on it, and the database to use: --db when given,
// else a fresh SQLite file in a temporary directory (the chain lives in
// memory, so data of an earlier run would belong to another chain).
func startDevChain(ctx context.Context, c *cli.Context, log *slog.Logger, chains []chain) (*devChain, []chain, string, error) {
	dsn := c.String("db")
	if !c.Bool("dev") {
		return nil, chains, dsn, nil
	}
	for _, ch := range chains {
		if ch.Name == "ETH" || ch.Name == devBTC {
			return nil, nil, "", shell.Usagef("--dev runs ETH and %s itself: give no --chain %s=... with it", devBTC, ch.Name)
		}
	}
	d := &devChain{}
	if !c.IsSet("db") {
		dir, err := os.MkdirTemp("", "addrd-dev-")
		if err != nil {
			return nil, nil, "", fmt.Errorf("dev database: %w", err)
		}
		d.dir = dir
		dsn = filepath.Join(dir, "addrd.db")
	}
	dev, err := devchain.Start(ctx, devchain.Config{BlockInterval: 2 * time.Second, Logger: log, Showcase: true})
	if err != nil {
		d.close()
		return nil, nil, "", err
	}
	d.dev = dev
	log.Info("dev chain", "rpc", dev.URL, "token", dev.Token.Hex(), "db", dsn)
	chains = append(chains, chain{Name: "ETH", RPC: dev.URL})
	btc, err := devnode.Start(ctx, devnode.Config{BlockInterval: 2 * time.Second, Logger: log})
	switch {
	case errors.Is(err, devnode.ErrNoBtcd):
		log.Info("dev chain: no btcd, so no Bitcoin regtest chain beside ETH", "err", err)
	case err != nil:
		d.close()
		return nil, nil, "", fmt.Errorf("dev btcd: %w", err)
	default:
		d.btc = btc
		n, _ := query.NetworkNamed(devBTC)
		chains = append(chains, chain{Name: devBTC, RPC: btc.URL, Native: n.Native, Family: query.FamilyUTXO, Network: n})
		log.Info("dev bitcoin node", "chain", devBTC, "rpc", redactURL(btc.URL))
	}
	return d, chains, dsn, nil
}

// announce checks that db holds no other chain's ETH data and prints the
// demo accounts and a ready API key.
func (d *devChain) announce(ctx context.Context, w io.Writer, db *store.DB) error {
	cp, ok, err := db.Checkpoint(ctx, "ETH")
	if err != nil {
		return err
	}
	if ok && cp.Hash != "" && d.dev.BlockHash(cp.Number).Hex() != cp.Hash {
		return errors.New("--dev: the database holds ETH data of another chain (the dev chain starts anew every run); give --dev a fresh --db or none")
	}
	if d.btc != nil {
		if _, ok, err := db.Checkpoint(ctx, devBTC); err != nil {
			return err
		} else if ok {
			return errors.New("--dev: the database holds " + devBTC + " data of another chain (the dev btcd starts anew every run); give --dev a fresh --db or none")
		}
	}
	fmt.Fprintf(w, "dev chain %s (token WDT %s)\n", d.dev.URL, d.dev.Token.Hex())
	for _, a := range d.dev.Accounts {
		fmt.Fprintf(w, "dev account %s\n", a.Hex())
	}
	fmt.Fprintf(w, "dev fee recipient %s\n", d.dev.FeeRecipient.Hex())
	fmt.Fprintf(w, "dev contracts: forwarder %s, destructor %s, factory %s\n", d.dev.Forwarder.Hex(), d.dev.Destructor.Hex(), d.dev.Factory.Hex())
	if d.btc != nil {
		fmt.Fprintf(w, "dev bitcoin chain %s\n", devBTC)
		for _, a := range d.btc.Addresses {
			fmt.Fprintf(w, "dev btc address %s\n", a)
		}
		for _, desc := range d.btc.Wallet {
			fmt.Fprintf(w, "dev btc wallet descriptor %s\n", desc)
		}
	}
	key, secret, err := db.CreateAPIKey(ctx, "dev")
	if err != nil {
		return fmt.Errorf("dev api key: %w", err)
	}
	fmt.Fprintf(w, "dev api key %s:%s\n", key.ID, secret)
	return nil
}

// close stops the chain and removes the temporary database.
func (d *devChain) close() {
	if d == nil {
		return
	}
	if d.btc != nil {
		d.btc.Close()
	}
	if d.dev != nil {
		d.dev.Close()
	}
	if d.dir != "" {
		os.RemoveAll(d.dir)
	}
}
