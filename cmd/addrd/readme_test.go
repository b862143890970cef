package main

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/wharfhq/wharf/internal/testenv"
)

// TestREADMEMonthEnd runs the README's "A month-end close with curl" as
// printed, in bash with set -euo pipefail, against addrd serve --dev
// (its U2, K and A lines set to this server, its key and its first
// account): every command must succeed, the filtered and ranged reads
// must print rows, and for every balance the opening balance plus the
// CSV's movements must be the closing balance, both as of times, from
// the statement.
func TestREADMEMonthEnd(t *testing.T) {
	bash := testenv.Tool(t, "bash")
	for _, tool := range []string{"curl", "jq", "bc", "awk", "date", "paste"} {
		testenv.Tool(t, tool)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, sec, ok := strings.Cut(string(readme), "\n### A month-end close with curl\n")
	if !ok {
		t.Fatal(`README.md has no section "A month-end close with curl"`)
	}
	m := regexp.MustCompile("(?s)```sh\n(.*?)```").FindStringSubmatch(sec)
	if m == nil {
		t.Fatal("the section has no sh block")
	}
	srv := startServe(t, "--dev")
	accounts, keys := srv.printed("dev account "), srv.printed("dev api key ")
	if len(accounts) == 0 || len(keys) != 1 {
		t.Fatalf("accounts %v, keys %q", accounts, keys)
	}
	var script []string
	set := map[string]string{"U2=": "U2=" + srv.base, "K=": "K=" + keys[0], "A=": "A=" + accounts[0]}
	for _, line := range strings.Split(m[1], "\n") {
		for prefix, v := range set {
			if strings.HasPrefix(line, prefix) {
				line = v
				delete(set, prefix)
			}
		}
		script = append(script, line)
	}
	if len(set) != 0 {
		t.Fatalf("the block does not set %v; teach the test its equivalent", set)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, "-c", "set -euo pipefail\n"+strings.Join(script, "\n"))
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README's month-end block: %v\n--- output\n%s\n--- server\n%s", err, out, srv.stderr)
	}
	t.Logf("%s", out)
	text := string(out)
	if n := strings.Count(text, ", adds up"); n < 2 {
		t.Errorf("%d balances add up, want the native coin and the demo token at least:\n%s", n, text)
	}
	if !strings.Contains(text, "chain,address,block_number,time,asset,contract,token_id,symbol,decimals,amount,amount_decimal") {
		t.Errorf("no CSV header in the output:\n%s", text)
	}
	if !strings.Contains(text, `"fee"`) || !strings.Contains(text, `"native:`) && !strings.Contains(text, `,"ETH",`) {
		t.Errorf("the ranged and filtered reads printed no rows:\n%s", text)
	}
}
