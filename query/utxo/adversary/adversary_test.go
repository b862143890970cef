package adversary_test

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
	"github.com/wharfhq/wharf/query/utxo"
	"github.com/wharfhq/wharf/query/utxo/adversary"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// env reads a count from the environment, def when unset.
func env(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: not a count", name, s)
	}
	return n
}

// seeds are the seeds of a run: ADDRD_UTXO_SEED alone (a failure's
// rerun), else ADDRD_UTXO_SEEDS (make soak) or few new ones.
func seeds(t *testing.T, few int) []uint64 {
	if s := os.Getenv("ADDRD_UTXO_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ADDRD_UTXO_SEED=%q: not a seed", s)
		}
		return []uint64{n}
	}
	n := env(t, "ADDRD_UTXO_SEEDS", few)
	base := uint64(time.Now().UnixNano())
	out := make([]uint64, n)
	for i := range out {
		out[i] = base + uint64(i)
	}
	return out
}

// TestAdversarial plays random regtest activity on btcd (btcd's dialect,
// its address index the truth) and litecoind (Core's, scantxoutset the
// truth) and, after every block or reorg, holds the reader's moves to the
// node: every tracked address's balance, open outputs, immature coinbase
// outputs and (btcd) transactions. make test runs 2 seeds of
// ADDRD_UTXO_STEPS steps (default 12) on each node; make soak 20 of 60.
func TestAdversarial(t *testing.T) {
	steps := env(t, "ADDRD_UTXO_STEPS", 12)
	for _, dialect := range []string{adversary.Btcd, adversary.Core} {
		t.Run(dialect, func(t *testing.T) {
			total := map[string]int{}
			start := time.Now()
			var reads, checks int
			for _, seed := range seeds(t, 2) {
				r := play(t, dialect, seed, steps)
				for k, v := range r.stats {
					total[k] += v
				}
				reads += r.reads
				checks += r.checks
				if t.Failed() {
					return
				}
			}
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(total)) {
				parts = append(parts, fmt.Sprintf("%s %d", k, total[k]))
			}
			t.Logf("%s: %d checks, %d blocks read, 0 violations in %s: %s", dialect, checks, reads, time.Since(start).Round(time.Millisecond), strings.Join(parts, ", "))
		})
	}
}

// gap is the checked wallet's gap limit: its descriptors' first 2
// addresses are the generator's. Discovery is checked with a gap of 1,
// so that finding index 1 takes deriving on from index 0.
const gap = 3

type result struct {
	stats         map[string]int
	reads, checks int
}

func play(t *testing.T, dialect string, seed uint64, steps int) result {
	t.Helper()
	ctx := context.Background()
	_, keys, descs, node, reader := regtest(t, dialect, seed)
	var tracked []string
	for _, k := range keys[:len(keys)-1] {
		tracked = append(tracked, k.Address.String)
	}
	checker := adversary.NewChecker(reader, node, tracked)
	var err error
	if checker.Wallet, err = utxo.NewWallet(gap, descs...); err != nil {
		t.Fatal(err)
	}
	g := adversary.NewGenerator(node, dialect, keys, rand.New(rand.NewPCG(seed, 37)), checker)
	if err := g.Mine(ctx, utxo.CoinbaseMaturity+1); err != nil {
		t.Fatal(err)
	}
	res := result{}
	for step := range steps {
		if err := g.Step(ctx); err != nil {
			t.Fatalf("seed %d (ADDRD_UTXO_SEED=%d reruns it) step %d: %v\n%s", seed, seed, step, err, tail(g.Log))
		}
		vs, err := checker.Check(ctx, dialect, g.Replaced)
		if err != nil {
			t.Fatalf("seed %d (ADDRD_UTXO_SEED=%d reruns it) step %d: check: %v\n%s", seed, seed, step, err, tail(g.Log))
		}
		res.checks++
		for _, p := range g.Premature {
			vs = append(vs, adversary.Violation{Rule: "mature", Detail: "utxo.Mature said spendable, the node refused: " + p})
		}
		if len(vs) > 0 {
			var b strings.Builder
			for i, v := range vs {
				if i == 20 {
					fmt.Fprintf(&b, "  … %d more\n", len(vs)-i)
					break
				}
				fmt.Fprintf(&b, "  %s\n", v)
			}
			t.Fatalf("seed %d (ADDRD_UTXO_SEED=%d reruns it) step %d on %s: %d violations:\n%s\nthe generator's last steps:\n%s", seed, seed, step, dialect, len(vs), b.String(), tail(g.Log))
		}
	}
	vs, err := checker.CheckDiscovery(ctx, dialect, 1, descs...)
	if err == nil {
		var more []adversary.Violation
		more, err = checker.CheckHistory(ctx)
		vs = append(vs, more...)
	}
	if err != nil || len(vs) > 0 {
		t.Fatalf("seed %d (ADDRD_UTXO_SEED=%d reruns it) on %s: discovery and history: %v %v", seed, seed, dialect, err, vs)
	}
	res.stats, res.reads = g.Stats, checker.Reads
	return res
}

func tail(log []string) string {
	if len(log) > 30 {
		log = log[len(log)-30:]
	}
	return "  " + strings.Join(log, "\n  ")
}

// regtest starts a regtest node of dialect (btcd or Litecoin Core) whose
// coinbase pays the first key of seed's wallet, and dials a reader of it.
func regtest(t *testing.T, dialect string, seed uint64) (*utxo.Network, []*adversary.Key, []*utxo.Descriptor, *testenv.BitcoinNode, *utxo.Reader) {
	t.Helper()
	name := "bitcoin-regtest"
	if dialect == adversary.Core {
		name = "litecoin-regtest"
	}
	net, err := utxo.NetworkByName(name)
	if err != nil {
		t.Fatal(err)
	}
	keys, descs, err := adversary.Wallet(net, seed)
	if err != nil {
		t.Fatal(err)
	}
	var node *testenv.BitcoinNode
	if dialect == adversary.Btcd {
		node = testenv.NewBtcd(t, keys[0].Address.String)
	} else {
		node = testenv.NewLitecoind(t)
	}
	reader, err := utxo.Dial(context.Background(), node.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reader.Close)
	return net, keys, descs, node, reader
}
