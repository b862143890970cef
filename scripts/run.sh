#!/usr/bin/env bash
# make run: a demo release published into ./public and served by wharf,
# beside addrd with its in-process dev chain.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
# The addresses of the two servers and the URL the page and install script
# name; set them when 8080 or 8090 is taken.
WHARF_LISTEN=${WHARF_LISTEN:-127.0.0.1:8080}
ADDRD_LISTEN=${ADDRD_LISTEN:-127.0.0.1:8090}
BASE_URL=${WHARF_BASE_URL:-http://$WHARF_LISTEN}

# A taken port is found before the build, not after it.
for pair in "WHARF_LISTEN=$WHARF_LISTEN" "ADDRD_LISTEN=$ADDRD_LISTEN"; do
  addr=${pair#*=}
  if (: <"/dev/tcp/${addr%:*}/${addr##*:}") 2>/dev/null; then
    echo "run: $addr is taken by another server: stop it, or choose another address, e.g." >&2
    echo "run:   ${pair%%=*}=${addr%:*}:$((${addr##*:} + 1)) make run" >&2
    exit 1
  fi
done

# --- publish -------------------------------------------------------------
# The binaries of make build (with the version and commit it records).
"${MAKE:-make}" -s build GO="$GO"
if [ ! -f dl.key ]; then
  ./bin/wharf keygen --out dl.key
fi
rm -rf demo-input
./scripts/demo-inputs.sh demo-input
# A second run finds 26.1.1 published with the same bytes and does nothing.
./bin/wharf publish --version 26.1.1 --key dl.key --store ./public \
  --base-url "$BASE_URL" --notes scripts/demo-notes.md demo-input
echo "run: demo release 26.1.1 in ./public (public key dl.pub)"

# --- serve ---------------------------------------------------------------
# Both servers in the foreground; Ctrl-C (or either one exiting) stops both.
pids=()
stop() { trap - EXIT INT TERM; kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; }
trap stop EXIT INT TERM
./bin/wharf serve --store ./public --listen "$WHARF_LISTEN" --db wharf.db &
pids+=($!)
./bin/addrd serve --dev --listen "$ADDRD_LISTEN" &
pids+=($!)
cat <<MSG
run: wharf serve on http://$WHARF_LISTEN  (try: curl -sS http://$WHARF_LISTEN/latest)
run: addrd serve --dev on http://$ADDRD_LISTEN (its demo accounts and a ready API key follow)
run: Ctrl-C stops both
MSG
wait -n "${pids[@]}"
