#!/usr/bin/env bash
# make bench: every benchmark prints a ratio against a reference measured in the same run.
#
#   scripts/bench.sh [SECTION...]                 run the sections (all when none is named)
#   scripts/bench.sh --against REV SECTION...     run each section on REV, then on the work
#                                                 tree, and compare their figures
#
# Each section is a function bench_<name> that prints its figures; list it in SECTIONS.
# Sections run real parts (MinIO, PostgreSQL): a missing part fails the run rather than
# skipping it, and a failing section says why. With --against, REV is checked out in a
# temporary git worktree and each section runs there with REV's own scripts and benchmarks,
# then here, back to back; then every figure of the two runs is printed side by side with
# its ratio (work tree / REV), and benchstat compares the Go benchmark lines. docs/bench.md
# says which sections a change to each package should run.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
export WHARF_REQUIRE_ALL=1

# benchstat, pinned; run through the Go module proxy on first use.
BENCHSTAT=${BENCHSTAT:-golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da}

SECTIONS=(publish publish_image serve hosting fetch store addrd books history freshness events)

# gobench PKG BENCH [TIMEOUT]: one iteration of a Go benchmark; prints the result line
# and the benchmark's log lines without their file:line prefix.
gobench() {
	local pkg=$1 bench=$2 timeout=${3:-15m} out
	out=$(mktemp)
	if ! "$GO" test -run '^$' -bench "^${bench}\$" -benchtime 1x -count 1 -timeout "$timeout" "$pkg" >"$out" 2>&1; then
		cat "$out"
		echo "bench: $bench in $pkg failed; its output is above" >&2
		rm -f "$out"
		return 1
	fi
	if ! grep -qE "^${bench}" "$out"; then
		cat "$out"
		echo "bench: $bench in $pkg printed no result line (skipped, or no such benchmark); its output is above" >&2
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

# publish_image: one 500 MiB image (a docker save of one layer) published into a directory
# against an fsynced io.Copy of its tar in the same run, ABBA, medians (BenchmarkPublishImage):
# publish/cp (the issue's target 1.1; publish writes the tar and its layer, twice the bytes),
# publish/2cp (the bytes it writes; target 1.1), read/input (each read of the archive counts 1,
# and so does each kernel copy). Then the upgrade from one patch release to the next with one
# changed layer (BenchmarkImageUpgrade): the bytes a pull fetches over the tar download.
bench_publish_image() {
	echo "== publish_image: wharf publish of one image into a directory vs cp of its tar"
	"$GO" test -run '^$' -bench '^BenchmarkPublishImage$' -benchtime 3x -count 1 -timeout 15m ./publish/ 2>&1 |
		grep -E '^(BenchmarkPublishImage|\s+image_bench_test.go)' | sed -E 's/^\s*(image_bench_test.go:[0-9]+: )?/  /'
	gobench ./publish/ BenchmarkImageUpgrade 15m
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

# store: the fetcher's write, StoreBlocks of chunks of 16 blocks of OP-stack traffic
# (BenchmarkFetchOPGeth's chain: 20 transfers and a deposit a block, 10 subscribed
# addresses), on SQLite and PostgreSQL, three runs of 64 chunks each: the CPU a block costs the
# process (SQLite runs in it) and PostgreSQL's backends, the time a block, the allocations
# of a chunk (BenchmarkStoreBlocks, query/store). Compare a change with --against REV store.
bench_store() {
	echo "== store: StoreBlocks of OP-stack blocks, SQLite and PostgreSQL"
	local out
	out=$(mktemp)
	if ! "$GO" test -run '^$' -bench '^BenchmarkStoreBlocks$' -benchtime 64x -count 3 -timeout 15m ./query/store/ >"$out" 2>&1; then
		cat "$out"
		echo "bench: BenchmarkStoreBlocks failed; its output is above" >&2
		rm -f "$out"
		return 1
	fi
	grep -E '^BenchmarkStoreBlocks' "$out" | sed -E 's/^/  /'
	rm -f "$out"
}

# addrd: the /v1 API on PostgreSQL and SQLite (scripts/bench-addrd.sh).
bench_addrd() { script_section addrd scripts/bench-addrd.sh; }

# books: the books reads over an address with 1,000,000 statement rows (WHARF_BENCH_ROWS),
# PostgreSQL and SQLite, wrk on loopback against a constant handler in the same server: a
# filtered range page (target: range/constant >= 0.25, first-page/range <= 1.2), balances as
# of a block (balances/balances-at <= 2), then the CSV export of every row by one client
# (export-rows/s >= 100,000, export-peak-rss-growth-MiB < 50). Seeding is one INSERT … SELECT
# over a generated series in the database (about a minute each).
bench_books() {
	echo "== books: ranges, balances as of a block, the CSV export"
	gobench ./query/api/ BenchmarkBooks 40m
}

# history: the full history of an address with 200 movements over 100,000 blocks of the archive
# dev chain (--backfill-blocks all: bisection and eth_getLogs by address) against a
# block-by-block scan of the same range, same run. Targets: <= 5% of the scan's RPC calls,
# <= 10% of its time, the same transactions; then, in the same run, an address that never sent
# (nonce 0, no code; receiver-*), target <= 3% of the calls. BenchmarkHistoryAnvil: the same
# on anvil, whose trace_filter finds what no state shows.
# The chain (on disk, with geth's log index; empty blocks sealed in bulk) takes about 3 minutes
# to build on 2 cores; -history.blocks N and -history.moves N (go test ... -args) change its size.
bench_history() {
	echo "== history: full history vs a block-by-block scan"
	gobench ./query/fetch/ BenchmarkHistory 40m
	gobench ./query/fetch/ BenchmarkHistoryAnvil 40m
}

# freshness: blocks every 250 ms with 10,000 subscriptions: the oldest balance against the
# refresh interval, and the head follower's blocks/s with the refresh running against none
# (target: ratio >= 0.9).
bench_freshness() {
	echo "== freshness: balances re-read at any block cadence"
	gobench ./query/fetch/ BenchmarkFreshness 15m
}

# events: webhook delivery on PostgreSQL to a local receiver against a bare loop of HTTP POSTs
# of the same bodies (one endpoint, target >= 1,000 events/s; 100 endpoints, >= 5,000/s), the
# writer's blocks/s with deliveries running against none, the fetcher's blocks/s with one
# endpoint taking its events against none (BenchmarkFetchWebhooks, >= 0.9), the latency from commit to
# receiver at 1,000 events/s (p50 <= 200 ms, p99 <= 1 s); and an addrd serve process holding
# 1,000 long polls of GET /v1/events: its RSS against the same process idle (< 200 MiB).
bench_events() {
	echo "== events: webhook deliveries vs bare HTTP POSTs; long polls"
	gobench ./query/webhook/ BenchmarkEvents 15m || return 1
	gobench ./query/fetch/ BenchmarkFetchWebhooks 15m || return 1
	gobench ./cmd/addrd/ BenchmarkLongPoll 10m
}

# figures FILE: the lines of a section's output that hold figures, each
# with its skeleton (the line with every number made #) first.
figures() {
	awk '
	{
		line = $0
		sub(/^[ \t]+/, "", line)
		sub(/^[a-z_0-9]+\.go:[0-9]+: /, "", line) # the file:line of a test log line
		if (line ~ /^(goos|goarch|pkg|cpu|PASS|ok) ?/) next
		skel = ""; nums = ""; rest = line
		while (match(rest, /[0-9][0-9,]*(\.[0-9]+)?/)) {
			skel = skel substr(rest, 1, RSTART - 1) "#"
			nums = nums " " substr(rest, RSTART, RLENGTH)
			rest = substr(rest, RSTART + RLENGTH)
		}
		if (nums == "") next
		skel = skel rest
		gsub(/[ \t]+/, " ", skel)
		print skel "\t" substr(nums, 2) "\t" line
	}' "$1"
}

# compare NAME REV REVOUT WORKOUT: every figure of the work tree's run beside
# REV's, with their ratio (work tree / REV); lines only one run printed are
# listed as such. Lines match by their text without the numbers (and their
# order among equal ones).
compare() {
	local name=$1 rev=$2 revout=$3 workout=$4
	echo
	echo "== $name: $rev vs the work tree (figures: REV -> work tree, ratio work tree / REV)"
	awk -F '\t' -v rev="$rev" '
	function num(s) { gsub(/,/, "", s); return s + 0 }
	NR == FNR { k = $1 SUBSEP (++seen[$1]); revnums[k] = $2; revline[k] = $3; order[++n] = k; next }
	{
		k = $1 SUBSEP (++wseen[$1])
		if (!(k in revnums)) { print "  only in the work tree: " $3; next }
		used[k] = 1
		split(revnums[k], a, " "); m = split($2, b, " ")
		out = $1; note = ""
		for (i = 1; i <= m; i++) {
			v = (a[i] == b[i]) ? b[i] : a[i] " -> " b[i]
			if (a[i] != b[i] && num(a[i]) != 0) v = v sprintf(" (x%.2f)", num(b[i]) / num(a[i]))
			sub(/#/, v, out)
		}
		print "  " out
	}
	END { for (i = 1; i <= n; i++) if (!(order[i] in used)) print "  only on " rev ": " revline[order[i]] }
	' <(figures "$revout") <(figures "$workout")
	local rb wb
	rb=$(mktemp) wb=$(mktemp)
	grep -E '^[[:space:]]*Benchmark[^ ]+[[:space:]]+[0-9]+[[:space:]]' "$revout" | sed -E 's/^[[:space:]]+//' >"$rb" || :
	grep -E '^[[:space:]]*Benchmark[^ ]+[[:space:]]+[0-9]+[[:space:]]' "$workout" | sed -E 's/^[[:space:]]+//' >"$wb" || :
	if [ -s "$rb" ] && [ -s "$wb" ]; then
		echo
		echo "== $name: benchstat $rev vs the work tree"
		# One run each: benchstat shows the change, without confidence intervals.
		if ! "$GO" run "$BENCHSTAT" "$rev=$rb" "work=$wb"; then
			echo "bench: benchstat failed (it runs through the Go module proxy: $BENCHSTAT)" >&2
		fi
	fi
	rm -f "$rb" "$wb"
}

# against REV SECTION...: each section on REV (in a temporary worktree,
# with REV's scripts) and on the work tree, back to back, then compared.
against() {
	local rev=$1 commit short tmp s rc_rev rc_work failed=()
	shift
	if [ $# -eq 0 ]; then
		echo "bench: --against $rev needs the sections to run (have: ${SECTIONS[*]})" >&2
		exit 2
	fi
	if ! commit=$(git rev-parse --verify --quiet "$rev^{commit}"); then
		echo "bench: --against: no commit $rev in this repository" >&2
		exit 2
	fi
	short=$(git rev-parse --short "$commit")
	tmp=$(mktemp -d /tmp/wharf-bench-against.XXXXXX)
	# shellcheck disable=SC2064 # expand now: the paths are fixed
	trap "git worktree remove --force '$tmp/rev' >/dev/null 2>&1 || :; rm -rf '$tmp'" EXIT
	git worktree add --detach --quiet "$tmp/rev" "$commit"
	for s in "$@"; do
		echo "== $s on $rev ($short), in $tmp/rev"
		set +e
		(cd "$tmp/rev" && bash scripts/bench.sh "$s") 2>&1 | tee "$tmp/$s.rev"
		rc_rev=${PIPESTATUS[0]}
		echo "== $s on the work tree"
		bash scripts/bench.sh "$s" 2>&1 | tee "$tmp/$s.work"
		rc_work=${PIPESTATUS[0]}
		set -e
		if [ "$rc_rev" -ne 0 ]; then
			echo "bench: section $s failed on $rev (exit $rc_rev); its output is above: the figures it printed are compared" >&2
		fi
		if [ "$rc_work" -ne 0 ]; then
			echo "bench: section $s failed on the work tree (exit $rc_work); its output is above" >&2
			failed+=("$s")
		fi
		compare "$s" "$short" "$tmp/$s.rev" "$tmp/$s.work"
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "bench: failed on the work tree: ${failed[*]}" >&2
		exit 1
	fi
}

main() {
	if [ "${1:-}" = "--against" ]; then
		if [ $# -lt 2 ]; then
			echo "usage: scripts/bench.sh --against REV SECTION..." >&2
			exit 2
		fi
		shift
		against "$@"
		return
	fi
	local run=("$@") s rc
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
		rc=0
		"bench_$s" || rc=$?
		if [ "$rc" -ne 0 ]; then
			echo "bench: section $s failed (exit $rc); why is above" >&2
			failed+=("$s")
		fi
	done
	if [ ${#failed[@]} -gt 0 ]; then
		echo "bench: failed: ${failed[*]}" >&2
		exit 1
	fi
}

main "$@"
