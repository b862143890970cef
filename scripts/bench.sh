#!/usr/bin/env bash
# make bench: every benchmark prints a ratio against a reference measured in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "bench: none yet"
