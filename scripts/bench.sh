#!/usr/bin/env bash
# make bench: every benchmark prints a ratio against a reference measured in the same run.
#
# Each section is a function bench_<name> that prints its figures; list it in SECTIONS.
# ./scripts/bench.sh runs them all, ./scripts/bench.sh publish one. Sections run real parts
# (MinIO, PostgreSQL): a missing part fails the run rather than skipping it.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export WHARF_REQUIRE_ALL=1

SECTIONS=(publish serve hosting fetch addrd history freshness)

# gobench PKG BENCH [TIMEOUT]: one iteration of a Go benchmark; prints the result line
# and the benchmark's log lines without their file:line prefix.
gobench() {
	local pkg=$1 bench=$2 timeout=${3:-15m} out
	out=$(mktemp)
	if ! "$GO" test -run '^$' -bench "^${bench}\$" -benchtime 1x -count 1 -timeout "$timeout" "$pkg" >"$out" 2>&1; then
		cat "$out"
		rm -f "$out"
		return 1
	fi
	grep -E "^${bench}" "$out" | sed -E 's/^/  /'
	grep -E '^\s+[a-z_]+\.go:[0-9]+: ' "$out" | sed -E 's/^\s+[a-z_]+\.go:[0-9]+: /  /'
	rm -f "$out"
}

# publish: `wharf publish` to a local MinIO against minio-go PutObject of the same files, at
# the issue's two sizes: ~1 GiB (18 archives of 4 MiB, 2 image tars of 500 MiB) and ~2 GiB
# (image tars of 1000 MiB). Targets: publish/ref <= 1.15, read/input 1.00 (each file read
# once), rss_MiB < 256, no artifact downloaded again. WHARF_BENCH_IMAGE_MIB and
# WHARF_BENCH_BINARY_MIB set one size instead.
bench_publish() {
	echo "== publish: wharf publish to MinIO vs minio-go PutObject of the same files"
	if [ -x bin/wharf ]; then
		export WHARF_BIN="$PWD/bin/wharf"
	fi
	if [ -n "${WHARF_BENCH_IMAGE_MIB:-}${WHARF_BENCH_BINARY_MIB:-}" ]; then
		gobench ./publish/s3/ BenchmarkPublish 15m
		return
	fi
	local mib
	for mib in 500 1000; do
		WHARF_BENCH_IMAGE_MIB=$mib gobench ./publish/s3/ BenchmarkPublish 15m || return 1
	done
}

# The other parts keep their benchmarks in scripts of their own; a section runs one.
script_section() {
	local name=$1 script=$2
	echo "== $name: $script"
	if [ ! -x "$script" ] && [ ! -f "$script" ]; then
		echo "bench: $script is missing" >&2
		return 1
	fi
	bash "$script"
}

# serve: wharf serve against nginx and MinIO (scripts/bench-serve.sh).
bench_serve() { script_section serve scripts/bench-serve.sh; }

# hosting: nginx with wharf hosting nginx (auth_request) against plain nginx (scripts/bench-hosting.sh).
bench_hosting() { script_section hosting scripts/bench-hosting.sh; }

# fetch: addrd's fetcher against a JSON-RPC reference (scripts/bench-fetch.sh).
bench_fetch() { script_section fetch scripts/bench-fetch.sh; }

# addrd: the /v1 API on PostgreSQL and SQLite (scripts/bench-addrd.sh).
bench_addrd() { script_section addrd scripts/bench-addrd.sh; }

# history: the full history of an address with 200 movements over 100,000 blocks of the archive
# dev chain (--backfill-blocks all: bisection and eth_getLogs by address) against a
# block-by-block scan of the same range, same run. Targets: <= 5% of the scan's RPC calls,
# <= 10% of its time, the same transactions. The chain (on disk, with geth's log index; empty
# blocks sealed in bulk) takes about 3 minutes to build on 2 cores; -history.blocks N and
# -history.moves N (go test ... -args) change its size.
bench_history() {
	echo "== history: full history vs a block-by-block scan"
	gobench ./query/ BenchmarkHistory 40m
}

# freshness: blocks every 250 ms with 10,000 subscriptions: the oldest balance against the
# refresh interval, and the head follower's blocks/s with the refresh running against none
# (target: ratio >= 0.9).
bench_freshness() {
	echo "== freshness: balances re-read at any block cadence"
	gobench ./query/ BenchmarkFreshness 15m
}

main() {
	local run=("$@") s
	if [ ${#run[@]} -eq 0 ]; then
		run=("${SECTIONS[@]}")
	fi
	for s in "${run[@]}"; do
		if ! declare -F "bench_$s" >/dev/null; then
			echo "bench: no section $s (have: ${SECTIONS[*]})" >&2
			exit 2
		fi
	done
	# A failing section does not stop the others; the run fails at the end.
	local failed=()
	for s in "${run[@]}"; do
		if ! "bench_$s"; then
			failed+=("$s")
		fi
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "bench: failed: ${failed[*]}" >&2
		exit 1
	fi
}

main "$@"
