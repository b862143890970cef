#!/usr/bin/env bash
# demo-inputs.sh DIR [LABEL]: fill DIR with a demo INPUT_DIR for wharf
# publish, as a build job would leave it: a tiny shell-script "executable"
# for every binary and build (BINARY-OS-PLATFORM) and a small docker save
# archive (one layer) for every image and platform (IMAGE-PLATFORM.tar). LABEL
# (default "demo") goes into every file, so two labels give different bytes.
set -euo pipefail

if [ $# -lt 1 ] || [ $# -gt 2 ]; then
  echo "usage: $0 DIR [LABEL]" >&2
  exit 2
fi
dir=$1
label=${2:-demo}
mkdir -p "$dir"

binaries="connector cord engine signer treasury-api treasury-cli"
images="treasury-node treasury-demo"
builds="linux-amd64 linux-arm64 macos-arm64"

for b in $binaries; do
  exe=$b
  [ "$b" = treasury-cli ] && exe=treasury
  for build in $builds; do
    f="$dir/$b-$build"
    if [ "$exe" = treasury ]; then
      # shellcheck disable=SC2016 # the demo script's own $1 and $2
      # The real treasury's contract: token create prints an access token
      # alone on its last line, or fails with nothing on stdout. The demo
      # has no server to ask, so it fails, saying what to do instead.
      printf '#!/bin/sh\nif [ "${1:-} ${2:-}" = "token create" ]; then\n  echo "treasury token create: the demo treasury (%s build %s) has no account server; set token= (wharf token create --user NAME) or api_key= (wharf apikey create --org ORG)" >&2\n  exit 1\nfi\necho "%s (%s build %s)"\n' "$label" "$build" "$exe" "$label" "$build" >"$f"
    else
      printf '#!/bin/sh\necho "%s (%s build %s)"\n' "$exe" "$label" "$build" >"$f"
    fi
    chmod 0755 "$f"
  done
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for img in $images; do
  for platform in amd64 arm64; do
    rm -rf "${tmp:?}"/*
    # One layer of one file, so a registry client has something to unpack.
    mkdir -p "$tmp/rootfs/etc"
    printf '%s %s %s\n' "$img" "$label" "$platform" >"$tmp/rootfs/etc/wharf-demo"
    tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@946684800 \
      -C "$tmp/rootfs" -cf "$tmp/layer.tar" etc
    diff_id=$(sha256sum "$tmp/layer.tar" | cut -d' ' -f1)
    printf '[{"Config":"config.json","RepoTags":["%s:demo"],"Layers":["layer.tar"]}]\n' "$img" >"$tmp/manifest.json"
    printf '{"architecture":"%s","os":"linux","comment":"%s %s","config":{"Cmd":["/bin/sh"]},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}\n' \
      "$platform" "$img" "$label" "$diff_id" >"$tmp/config.json"
    tar --format=ustar --owner=0 --group=0 --numeric-owner --mtime=@946684800 \
      -C "$tmp" -cf "$dir/$img-$platform.tar" manifest.json config.json layer.tar
  done
done
echo "demo inputs in $dir ($label)"
