#!/usr/bin/env bash
# make run: a demo release published into ./public. Grows with the serve
# and addrd issues.
set -euo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
BASE_URL=${WHARF_BASE_URL:-http://127.0.0.1:8080}

# --- publish -------------------------------------------------------------
"$GO" build -o bin/wharf ./cmd/wharf
if [ ! -f dl.key ]; then
  ./bin/wharf keygen --out dl.key
fi
rm -rf demo-input
./scripts/demo-inputs.sh demo-input
# A second run finds 26.1.1 published with the same bytes and does nothing.
./bin/wharf publish --version 26.1.1 --key dl.key --store ./public \
  --base-url "$BASE_URL" demo-input
echo "run: demo release 26.1.1 in ./public (public key dl.pub)"

# --- serve (added by the serve issue) -------------------------------------
# ./bin/wharf serve --store ./public --listen 127.0.0.1:8080
