// Package deptest holds the layering of STYLE.md ("who may import whom")
// as a test over `go list`.
package deptest

import (
	"encoding/json"
	"fmt"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const mod = "github.com/wharfhq/wharf/"

type pkg struct {
	ImportPath string
	Imports    []string
}

func packages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports", mod+"...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// std reports whether path is a package of the standard library (no dot
// in its first element).
func std(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}

// gethNode reports whether path is a package of go-ethereum's node (the
// node, the eth service, the chain, the pool, p2p, the miner) rather than
// of its client (rpc, ethclient, common, core/types, crypto, params).
func gethNode(path string) bool {
	const geth = "github.com/ethereum/go-ethereum/"
	rest, ok := strings.CutPrefix(path, geth)
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "node", "eth", "p2p", "miner", "triedb", "ethdb":
		return true
	case "core":
		return rest != "core/types"
	}
	return false
}

func under(path, root string) bool {
	return path == mod+root || strings.HasPrefix(path, mod+root+"/")
}

func TestLayering(t *testing.T) {
	pkgs := packages(t)
	if len(pkgs) < 5 {
		t.Fatalf("go list found %d packages; the module should have more", len(pkgs))
	}
	for _, p := range pkgs {
		for _, imp := range p.Imports {
			var broken string
			switch {
			case under(imp, "cmd"):
				broken = "nothing imports cmd/*"
			case under(p.ImportPath, "publish") && (under(imp, "site") || under(imp, "query")):
				broken = "publish imports neither site nor query"
			case under(p.ImportPath, "query") && (under(imp, "site") || under(imp, "publish")):
				broken = "query imports neither site nor publish"
			case under(p.ImportPath, "site") && under(imp, "query"):
				broken = "site does not import query"
			case (p.ImportPath == mod+"publish" || p.ImportPath == mod+"query") &&
				(imp == "net/http" || imp == "database/sql" || strings.Contains(imp, "minio-go") || strings.Contains(imp, "uptrace/bun") || strings.Contains(imp, "go-ethereum")):
				broken = "the root of a part imports neither net/http nor a driver"
			case strings.HasPrefix(imp, "github.com/minio/minio-go") && p.ImportPath != mod+"publish/s3" && p.ImportPath != mod+"internal/testenv":
				broken = "only publish/s3 imports minio-go"
			case p.ImportPath == mod+"query" && (!std(imp) || imp == "sync"):
				broken = "the query root holds types and seams only: the standard library, no workers (sync); the fetcher is query/fetch"
			case under(p.ImportPath, "query/fetch") && (under(imp, "query/evm") || under(imp, "query/store") || under(imp, "query/api")):
				broken = "query/fetch works through the query seams, never an adapter"
			case under(imp, "query/fetch") && !under(p.ImportPath, "cmd") && !under(p.ImportPath, "query/fetch"):
				broken = "only cmd/* runs the fetcher"
			case p.ImportPath == mod+"query/evm" && gethNode(imp):
				broken = "the adapter imports the go-ethereum client packages its Source needs; the node is query/evm/devchain's"
			case under(imp, "query/evm/devchain") && (p.ImportPath == mod+"query" || under(p.ImportPath, "query/fetch") || under(p.ImportPath, "query/api") || under(p.ImportPath, "query/store")):
				broken = "the dev chain is for addrd serve --dev and for tests (and query/evm/adversary's scenarios), never the service's own packages"
			case !strings.HasPrefix(p.ImportPath, mod+"internal/") && under(imp, "internal/testenv"):
				broken = "only tests import internal/testenv"
			}
			if broken != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, broken)
			}
		}
	}
}

// TestQueryRootArithmetic: in the query root only the Amount type
// (amount.go) does arithmetic (math/big); every other file holds types
// and seams.
func TestQueryRootArithmetic(t *testing.T) {
	files, err := filepath.Glob("../../query/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("query/*.go: %v, %d files", err, len(files))
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") || filepath.Base(name) == "amount.go" {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if imp.Path.Value == `"math/big"` {
				t.Errorf("%s imports math/big: in the query root only amount.go (the Amount type) does arithmetic", name)
			}
		}
	}
}

// family reports whether path is a chain family's package: the EVM's
// (query/evm) or the UTXO chains' (query/utxo), with their subpackages.
func family(path string) bool { return under(path, "query/evm") || under(path, "query/utxo") }

// core lists the chain-neutral packages of addrd: they reach a chain
// through the query/chain seam only.
var core = []string{"query/fetch", "query/store", "query/api", "query/events", "query/webhook"}

func TestChainSeam(t *testing.T) {
	for _, p := range packages(t) {
		for _, imp := range p.Imports {
			var broken string
			switch {
			case under(p.ImportPath, "query/chain") && !under(p.ImportPath, "query/chain/chaintest") && !std(imp) && imp != mod+"query" && !under(imp, "query/chain"):
				broken = "the seam holds interfaces over the query root's types: the standard library and query only"
			case family(imp) && inCore(p.ImportPath):
				broken = "the chain-neutral core reaches a chain through query/chain, never a family's package"
			case under(p.ImportPath, "query/evm") && under(imp, "query/utxo"), under(p.ImportPath, "query/utxo") && under(imp, "query/evm"):
				broken = "a family never imports another"
			}
			if broken != "" {
				t.Errorf("%s imports %s: %s", p.ImportPath, imp, broken)
			}
		}
	}
}

func inCore(path string) bool {
	for _, c := range core {
		if under(path, c) {
			return true
		}
	}
	return false
}

// evmWords are the EVM's concepts as the code names them: an identifier
// containing one (any case), or a string literal starting with 0x.
var evmWords = []string{"gas", "nonce", "receipt", "logindex", "trace"}

// evmNames is how many names of EVM concepts each core package's code
// may hold (identifiers and string literals, not comments; tests aside):
// none, the EVM's are in query/evm. A count above it fails, naming the
// new ones.
var evmNames = map[string]int{
	"query/fetch":   0,
	"query/store":   0,
	"query/api":     0,
	"query/events":  0,
	"query/webhook": 0,
}

func TestCoreNamesNoEVM(t *testing.T) {
	for _, dir := range core {
		files, err := filepath.Glob("../../" + dir + "/*.go")
		if err != nil || len(files) == 0 {
			t.Fatalf("%s/*.go: %v, %d files", dir, err, len(files))
		}
		var found []string
		for _, name := range files {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			found = append(found, evmNamesIn(t, name)...)
		}
		allowed := evmNames[dir]
		switch {
		case len(found) > allowed:
			t.Errorf("%s names EVM concepts %d times, at most %d: the EVM family's code goes in query/evm; the names:\n%s",
				dir, len(found), allowed, strings.Join(found, "\n"))
		case len(found) < allowed:
			t.Logf("%s names EVM concepts %d times, below the %d allowed: lower evmNames[%q]", dir, len(found), allowed, dir)
		}
	}
}

// evmNamesIn lists where file name names an EVM concept.
func evmNamesIn(t *testing.T, name string) []string {
	t.Helper()
	src, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	file := fset.AddFile(name, -1, len(src))
	var s scanner.Scanner
	s.Init(file, src, nil, 0)
	var out []string
	var prev, prev2 string // the two tokens before, as text
	for {
		pos, tok, lit := s.Scan()
		if tok == token.EOF {
			return out
		}
		stdlib := prev2 == "http" && prev == "."
		prev2, prev = prev, lit
		if lit == "" {
			prev = tok.String()
		}
		switch tok {
		case token.IDENT:
			if stdlib {
				continue // net/http's names: http.MethodTrace is HTTP's TRACE, not the EVM's
			}
			low := strings.ToLower(lit)
			for _, w := range evmWords {
				if strings.Contains(low, w) {
					out = append(out, fmt.Sprintf("%s: %s", fset.Position(pos), lit))
					break
				}
			}
		case token.STRING:
			if v, err := strconv.Unquote(lit); err == nil && strings.HasPrefix(v, "0x") {
				out = append(out, fmt.Sprintf("%s: %s", fset.Position(pos), lit))
			}
		}
	}
}
