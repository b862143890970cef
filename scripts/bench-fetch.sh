#!/usr/bin/env bash
# Fetcher benchmarks (issues 5 and 10), each against a reference in the same run:
#  - BenchmarkFetch: blocks indexed per second on the dev chain over HTTP
#    JSON-RPC into SQLite, traces on, with 10 and with FETCH_SUBS
#    subscriptions, and a reference loop reading the same blocks, receipts
#    and traces (callTracer) with ethclient;
#  - BenchmarkFetchGeth: the same against a real geth --dev (make geth);
#  - BenchmarkServeDevLatency: addrd serve --dev, PUT to first balances and
#    a mined transfer to the API listing it.
# Sizes: FETCH_BLOCKS (1000), FETCH_TXS (100), FETCH_SUBS (100000). Making
# the chain takes about 3 minutes of the run at the full size.
set -euo pipefail
cd "$(dirname "$0")/.."
blocks=${FETCH_BLOCKS:-1000}
txs=${FETCH_TXS:-100}
subs=${FETCH_SUBS:-100000}
go test ./query/ -run '^$' -bench '^BenchmarkFetch$' -benchtime=1x -timeout 30m \
	-args -fetch.blocks="$blocks" -fetch.txs="$txs" -fetch.subs="$subs" | grep -vE '^(goos|goarch|pkg|cpu):'
go test ./query/ -run '^$' -bench '^BenchmarkFetchGeth$' -benchtime=1x -timeout 30m | grep -E '^fetch geth'
go test ./cmd/addrd/ -run '^$' -bench '^BenchmarkServeDevLatency$' -benchtime=1x -timeout 5m | grep -vE '^(goos|goarch|pkg|cpu):'
