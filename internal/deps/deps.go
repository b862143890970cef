//go:build tools

// Package deps pins the modules the parts under construction will import,
// so that go.sum holds them before the code does. Deleted once they are used.
package deps

import (
	_ "github.com/BurntSushi/toml"
	_ "github.com/chromedp/chromedp"
	_ "github.com/ethereum/go-ethereum/accounts/abi/bind/v2"
	_ "github.com/ethereum/go-ethereum/ethclient"
	_ "github.com/ethereum/go-ethereum/ethclient/simulated"
	_ "github.com/ethereum/go-ethereum/node"
	_ "github.com/ethereum/go-ethereum/rpc"
	_ "github.com/golang-jwt/jwt/v5"
	_ "github.com/lib/pq"
	_ "github.com/minio/minio-go/v7"
	_ "github.com/minio/minio-go/v7/pkg/credentials"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/sigstore/sigstore/pkg/cryptoutils"
	_ "github.com/sigstore/sigstore/pkg/signature"
	_ "github.com/sigstore/sigstore/pkg/signature/kms"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/aws"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/azure"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/gcp"
	_ "github.com/sigstore/sigstore/pkg/signature/kms/hashivault"
	_ "github.com/uptrace/bun"
	_ "github.com/uptrace/bun/dialect/pgdialect"
	_ "github.com/uptrace/bun/dialect/sqlitedialect"
	_ "github.com/uptrace/bun/migrate"
	_ "github.com/urfave/cli/v2"
	_ "golang.org/x/term"
	_ "golang.org/x/time/rate"
	_ "modernc.org/sqlite"
)
