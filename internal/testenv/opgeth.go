package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// OPGethBinary finds the pinned op-geth (Optimism's go-ethereum,
// v1.101702.3, `make op-geth`): $WHARF_OP_GETH, ./bin/op-geth at the
// module root, $(go env GOPATH)/bin/op-geth, or PATH. It is named op-geth
// so that it never shadows geth. Package testenv/opgeth runs it.
func OPGethBinary() (string, error) {
	var candidates []string
	if p := os.Getenv("WHARF_OP_GETH"); p != "" {
		candidates = append(candidates, p)
	}
	if root, err := moduleRoot(); err == nil {
		candidates = append(candidates, filepath.Join(root, "bin", "op-geth"))
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		for _, gp := range filepath.SplitList(strings.TrimSpace(string(out))) {
			candidates = append(candidates, filepath.Join(gp, "bin", "op-geth"))
		}
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && !st.IsDir() {
			return c, nil
		}
	}
	if p, err := exec.LookPath("op-geth"); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("op-geth: %w (make op-geth builds the pinned one)", errNotFound)
}
