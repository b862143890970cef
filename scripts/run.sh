#!/usr/bin/env bash
# make run: a demo release published into ./public. Grows with the serve
# and addrd issues.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "run: not wired yet" >&2
exit 1
