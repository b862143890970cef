#!/usr/bin/env bash
# Fetcher benchmarks, each against a reference in the same run:
#  - BenchmarkFetch: blocks indexed per second on the dev chain over HTTP
#    JSON-RPC into SQLite, traces on, with 10 and with FETCH_SUBS
#    subscriptions, and a reference loop reading the same blocks, receipts
#    and traces (callTracer) with ethclient;
#  - BenchmarkFetchGeth: the same against a real geth --dev (make geth);
#  - BenchmarkFetchOPGeth: the same against a real op-geth (make op-geth),
#    with the CPU a block costs the node and the fetcher, and the EVM
#    family's reads alone (docs/bench.md, "The fetcher on op-geth");
#  - BenchmarkServeDevLatency: addrd serve --dev, PUT to first balances and
#    a mined transfer to the API listing it.
# Sizes: FETCH_BLOCKS (1000), FETCH_TXS (100), FETCH_SUBS (100000). Making
# the chain takes about 3 minutes of the run at the full size.
set -euo pipefail
cd "$(dirname "$0")/.."
blocks=${FETCH_BLOCKS:-1000}
txs=${FETCH_TXS:-100}
subs=${FETCH_SUBS:-100000}
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# gotest WANT SHOW ARGS...: go test ARGS, printing its lines that match SHOW
# (all but go test's goos, goarch, pkg and cpu lines when SHOW is -); when
# it fails, or prints no line matching WANT, its whole output and why.
gotest() {
	local want=$1 show=$2
	shift 2
	if ! go test "$@" >"$out" 2>&1; then
		cat "$out"
		echo "bench-fetch: go test $* failed; its output is above" >&2
		return 1
	fi
	if ! grep -qE "$want" "$out"; then
		cat "$out"
		echo "bench-fetch: go test $* printed no line matching '$want'; its output is above" >&2
		return 1
	fi
	if [ "$show" = - ]; then
		grep -vE '^(goos|goarch|pkg|cpu):' "$out"
	else
		grep -E "$show" "$out"
	fi
}

# Each benchmark runs even when one before it failed; the script fails at the end.
rc=0
gotest '^fetch: ' - ./query/fetch/ -run '^$' -bench '^BenchmarkFetch$' -benchtime=1x -timeout 30m \
	-args -fetch.blocks="$blocks" -fetch.txs="$txs" -fetch.subs="$subs" || rc=1
gotest '^fetch geth' '^fetch geth' ./query/fetch/ -run '^$' -bench '^BenchmarkFetchGeth$' -benchtime=1x -timeout 30m || rc=1
gotest '^fetch op-geth' '^fetch op-geth' ./query/fetch/ -run '^$' -bench '^BenchmarkFetchOPGeth$' -benchtime=1x -timeout 30m || rc=1
gotest '^dev: ' - ./cmd/addrd/ -run '^$' -bench '^BenchmarkServeDevLatency$' -benchtime=1x -timeout 5m || rc=1
exit $rc
