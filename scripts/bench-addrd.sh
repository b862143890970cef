#!/usr/bin/env bash
# addrd benchmarks, each a ratio against a
# reference measured in the same run, on PostgreSQL and SQLite:
#   - a page of 50 transactions at depth 10,000 against the first page
#     (keyset paging: should be <= 1.2), 10,000 addresses, 1,000,000 txs;
#   - a page of 50 statement rows at depth 10,000 against the first page
#     (<= 1.2);
#   - wrk on loopback, 64 connections, 10 s each: balances, the first page
#     of transactions and the first page of the statement, flat out
#     against a constant JSON handler in the same server behind the same
#     auth (targets: balances >= 0.5, the pages >= 0.3), with the p99 at
#     saturation and what a request costs: CPU of the server and of
#     PostgreSQL, and Go allocations;
#   - vegeta on loopback, open loop, 10 s each, at a quarter of the
#     constant handler's rate: the constant handler (the machine's own
#     latency at that load), balances and the two first pages, their p50
#     and p99 (target < 20 ms) and the part of the rate answered.
# Each part seeds its own throwaway databases (a few minutes each).
# WHARF_BENCH_ADDRESSES and WHARF_BENCH_TXS set smaller data sets while
# iterating; WHARF_BENCH_PROFILE=DIR writes CPU and allocation profiles of
# each HTTP read there (query/api/bench_wrk_test.go says how to read them).
# WHARF_BENCH_ADDRD_PARTS runs some of the parts, by name: "depth http
# statement" by default; "http" alone is the ratios and the latencies.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

out=$(mktemp)
bin=$(mktemp -d)
trap 'rm -rf "$out" "$bin"' EXIT

# vegeta, the open-loop loader, pinned; built through the Go module proxy
# (from the build cache after the first time), in a module of its own.
VEGETA=${VEGETA:-github.com/tsenart/vegeta/v12@v12.13.0}
if ! GOBIN=$bin $GO install "$VEGETA"; then
	echo "bench: cannot install $VEGETA (it comes through the Go module proxy)" >&2
	exit 1
fi
export PATH="$bin:$PATH"

parts=" ${WHARF_BENCH_ADDRD_PARTS:-depth http statement} "
part() { [[ $parts == *" $1 "* ]]; }

if part depth; then
	echo "== addrd: deep page vs first page (go test -bench BenchmarkTransactionsDepth ./query/store)"
	$GO test -run '^$' -bench 'BenchmarkTransactionsDepth' -benchtime 300x -timeout 60m ./query/store | tee -a "$out"
fi

if part http; then
	echo "== addrd: HTTP reads vs a constant handler (wrk, vegeta; go test -bench BenchmarkHTTP ./query/api)"
	# -v: every log line of the benchmark (without it Go keeps ten).
	$GO test -v -run '^$' -bench 'BenchmarkHTTP' -benchtime 1x -timeout 60m ./query/api | tee -a "$out"
fi

if part statement; then
	echo "== addrd: statement pages (go test -bench BenchmarkStatement ./query/api): depth 10,000 vs first page (target <= 1.2)"
	$GO test -run '^$' -bench 'BenchmarkStatement' -benchtime 1x -timeout 30m ./query/api | grep -E '^(statement |BenchmarkStatement)' | tee -a "$out"
fi

echo
echo "== addrd ratios"
awk '
/^BenchmarkTransactionsDepth\// {
	split($1, p, "/"); db = p[2]; sub(/-[0-9]+$/, "", db)
	for (i = 3; i < NF; i++) if ($(i+1) == "depth/first") printf "%-10s depth 10000 / first page   %6s  (target <= 1.2)\n", db, $i
}
/^BenchmarkStatement\// {
	split($1, p, "/"); db = p[2]; sub(/-[0-9]+$/, "", db)
	for (i = 3; i < NF; i++) if ($(i+1) == "depth/first") printf "%-10s statement depth 10000 / first page     %6s  (target <= 1.2)\n", db, $i
}
/^BenchmarkHTTP\// {
	split($1, p, "/"); db = p[2]; sub(/-[0-9]+$/, "", db)
	for (i = 3; i < NF; i++) {
		u = $(i+1)
		if (u == "constant-rps") printf "%-10s constant req/s                 %6s\n", db, $i
		if (split(u, q, "/") == 2 && q[2] == "constant") {
			want = (q[1] == "balances") ? 0.5 : 0.3
			printf "%-10s %s / constant  %6s  (target >= %s)\n", db, q[1], $i, want
		}
		if (u ~ /-saturated-p99-ms$/) { sub(/-saturated-p99-ms$/, "", u); printf "%-10s %-12s p99 ms, saturated        %6s\n", db, u, $i }
		if (u == "constant-vegeta-rps") printf "%-10s constant req/s, vegeta flat out %6s  (the loader alone at 64 workers)\n", db, $i
		if (u ~ /^[a-z]+-held$/)      { sub(/-held$/, "", u);             printf "%-10s %-12s ¼ rate: answered / rate  %6s  (>= 0.98: the rate held)\n", db, u, $i }
		if (u ~ /^[a-z]+-p50-ms$/)    { sub(/-p50-ms$/, "", u);           printf "%-10s %-12s ¼ rate: p50 ms           %6s\n", db, u, $i }
		if (u ~ /^[a-z]+-p99-ms$/)    { sub(/-p99-ms$/, "", u);           t = (u == "constant") ? "(the machine itself)" : "(target < 20)"; printf "%-10s %-12s ¼ rate: p99 ms           %6s  %s\n", db, u, $i, t }
		if (u ~ /-server-µs\/req$/)   { sub(/-server-µs\/req$/, "", u);   printf "%-10s %-12s server CPU µs/request    %6s\n", db, u, $i }
		if (u ~ /-postgres-µs\/req$/) { sub(/-postgres-µs\/req$/, "", u); printf "%-10s %-12s PostgreSQL CPU µs/request %5s\n", db, u, $i }
		if (u ~ /-allocs\/req$/)      { sub(/-allocs\/req$/, "", u);      printf "%-10s %-12s allocations/request      %6s\n", db, u, $i }
	}
}' "$out"
