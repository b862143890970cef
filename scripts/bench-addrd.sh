#!/usr/bin/env bash
# addrd benchmarks (issue 4 "Performance"), each a ratio against a
# reference measured in the same run, on PostgreSQL and SQLite:
#   - a page of 50 transactions at depth 10,000 against the first page
#     (keyset paging: should be <= 1.2), 10,000 addresses, 1,000,000 txs;
#   - wrk on loopback, 64 connections, 10 s each: balances and first-page
#     transaction reads flat out against a constant JSON handler in the same
#     server behind the same auth (target >= 0.25), and their p99 when paced
#     at that quarter of the constant handler's rate (target < 20 ms); the
#     p99 at saturation is printed beside it.
# Each part seeds its own throwaway databases (a few minutes each).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}

out=$(mktemp)
trap 'rm -f "$out"' EXIT

echo "== addrd: deep page vs first page (go test -bench BenchmarkTransactionsDepth ./query/store)"
$GO test -run '^$' -bench 'BenchmarkTransactionsDepth' -benchtime 300x -timeout 60m ./query/store | tee -a "$out"

echo "== addrd: HTTP reads vs a constant handler (wrk, go test -bench BenchmarkHTTP ./query/api)"
$GO test -run '^$' -bench 'BenchmarkHTTP' -benchtime 1x -timeout 60m ./query/api | tee -a "$out"

echo "== addrd: statement reads (go test -bench BenchmarkStatement ./query/api): first page vs a constant handler (target >= 0.25), depth 10,000 vs first page (target <= 1.2)"
$GO test -run '^$' -bench 'BenchmarkStatement' -benchtime 1x -timeout 30m ./query/api | grep -E '^statement ' | tee -a "$out"

echo
echo "== addrd ratios"
awk '
/^BenchmarkTransactionsDepth\// {
	split($1, p, "/"); db = p[2]; sub(/-[0-9]+$/, "", db)
	for (i = 3; i < NF; i++) if ($(i+1) == "depth/first") printf "%-10s depth 10000 / first page   %6s  (target <= 1.2)\n", db, $i
}
/^BenchmarkHTTP\// {
	split($1, p, "/"); db = p[2]; sub(/-[0-9]+$/, "", db)
	for (i = 3; i < NF; i++) {
		if ($(i+1) == "constant-rps")                  printf "%-10s constant req/s                 %6s\n", db, $i
		if ($(i+1) == "balances/constant")             printf "%-10s balances / constant            %6s  (target >= 0.25)\n", db, $i
		if ($(i+1) == "balances-saturated-p99-ms")     printf "%-10s balances p99 ms, saturated     %6s\n", db, $i
		if ($(i+1) == "balances-paced/target")         printf "%-10s balances paced / target rate   %6s  (>= 1: the quarter sustained)\n", db, $i
		if ($(i+1) == "balances-p99-ms")               printf "%-10s balances p99 ms at that rate   %6s  (target < 20)\n", db, $i
		if ($(i+1) == "transactions/constant")         printf "%-10s transactions / constant        %6s  (target >= 0.25)\n", db, $i
		if ($(i+1) == "transactions-saturated-p99-ms") printf "%-10s transactions p99 ms, saturated %6s\n", db, $i
		if ($(i+1) == "transactions-paced/target")     printf "%-10s transactions paced / target    %6s  (>= 1: the quarter sustained)\n", db, $i
		if ($(i+1) == "transactions-p99-ms")           printf "%-10s transactions p99 ms at that rate %4s  (target < 20)\n", db, $i
	}
}' "$out"
