package testenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Anvil is a real anvil (Foundry's EVM node, 1.7.1, `make anvil`) on
// loopback: a fresh chain (ID 31337) that mines a block for each
// transaction, with ten funded, unlocked accounts that sign through
// eth_sendTransaction. It is a second EVM implementation beside geth, so
// that the EVM family is not shaped by one node's quirks.
type Anvil struct {
	// URL is the HTTP JSON-RPC endpoint, http://127.0.0.1:PORT.
	URL string
	// Accounts are the funded dev accounts, lowercase 0x-hex.
	Accounts []string
}

// AnvilBinary finds the pinned anvil: $WHARF_ANVIL, the npm package
// make anvil installs under tools/anvil at the module root, or PATH.
func AnvilBinary() (string, error) {
	var candidates []string
	if p := os.Getenv("WHARF_ANVIL"); p != "" {
		candidates = append(candidates, p)
	}
	if root, err := moduleRoot(); err == nil {
		candidates = append(candidates, filepath.Join(root, "tools", "anvil", "node_modules", "@foundry-rs", "anvil-linux-amd64", "bin", "anvil"))
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath("anvil"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("anvil: %w (make anvil installs the pinned one)", errNotFound)
}

// NewAnvil starts an anvil of the test's own, with args added to its
// command line, and stops it at cleanup. It skips or fails as Need when
// anvil is not installed. anvil keeps the state of its recent blocks
// only: a test that reads older ones asks for more with
// "--max-persisted-states", N.
func NewAnvil(tb testing.TB, args ...string) *Anvil {
	tb.Helper()
	bin, err := AnvilBinary()
	Need(tb, "anvil", err)
	var a *Anvil
	for attempt := 0; ; attempt++ {
		a, err = startAnvil(tb, bin, args)
		if err == nil || attempt == 2 {
			break
		}
	}
	if err != nil {
		tb.Fatalf("anvil: %v", err)
	}
	var accounts []string
	if err := a.g().Call(context.Background(), &accounts, "eth_accounts"); err != nil || len(accounts) == 0 {
		tb.Fatalf("anvil: eth_accounts = %v, %v", accounts, err)
	}
	for _, acc := range accounts {
		a.Accounts = append(a.Accounts, strings.ToLower(acc))
	}
	return a
}

func startAnvil(tb testing.TB, bin string, args []string) (*Anvil, error) {
	port := FreePort(tb)
	cmd := exec.Command(bin, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--silent"}, args...)...)
	var out Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start anvil: %w", err)
	}
	done := make(chan struct{})
	go func() { cmd.Wait(); close(done) }()
	a := &Anvil{URL: "http://127.0.0.1:" + strconv.Itoa(port)}
	// A readiness wait, not synchronisation.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		var head string
		if a.g().Call(ctx, &head, "eth_blockNumber") == nil {
			tb.Cleanup(func() {
				cmd.Process.Kill()
				<-done
				if tb.Failed() {
					tb.Logf("anvil output:\n%s", out.String())
				}
			})
			return a, nil
		}
		select {
		case <-done:
			return nil, fmt.Errorf("anvil exited at start: %s", out.String())
		case <-ctx.Done():
			cmd.Process.Kill()
			<-done
			return nil, fmt.Errorf("anvil not ready at %s after 30s: %s", a.URL, out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// g is a Geth on a's endpoint, for its JSON-RPC helpers (Call, Send,
// Receipt), which speak plain Ethereum JSON-RPC.
func (a *Anvil) g() *Geth { return &Geth{URL: a.URL} }

// Call makes one JSON-RPC call (as Geth.Call).
func (a *Anvil) Call(ctx context.Context, result any, method string, params ...any) error {
	return a.g().Call(ctx, result, method, params...)
}

// Send sends a transaction from one of the accounts (eth_sendTransaction)
// and returns its receipt once mined (as Geth.Send).
func (a *Anvil) Send(ctx context.Context, tx map[string]any) (map[string]any, error) {
	return a.g().Send(ctx, tx)
}
