//go:build tools

// Package opgeth pins op-geth's cmd/geth for make op-geth.
package opgeth

import _ "github.com/ethereum/go-ethereum/cmd/geth"
