package testenv

// OPGethBinary finds the pinned op-geth (Optimism's go-ethereum,
// v1.101702.3, `make op-geth`): $WHARF_OP_GETH, ./bin/op-geth at the
// module root, $(go env GOPATH)/bin/op-geth, or PATH. It is named op-geth
// so that it never shadows geth. Package testenv/opgeth runs it.
func OPGethBinary() (string, error) {
	return goTool("op-geth", "WHARF_OP_GETH", "make op-geth builds the pinned one")
}
