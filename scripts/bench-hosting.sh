#!/usr/bin/env bash
# bench-hosting.sh: the tree served by nginx with `wharf hosting nginx`
# (wharf serve answering auth_request), against nginx serving the same
# files in the same run with no auth at all. Loopback only; every wrk run
# bounded (DURATION seconds, default 4). Each ratio is the median over
# ROUNDS rounds (default 3) of reference, measured, measured, reference.
#
#   auth-download   authenticated 50 MiB downloads (API key), bytes/s,
#                   hosting nginx + auth_request ÷ plain nginx       (want >= 0.9)
#   auth-small      the same for a small archive, downloads/s: the
#                   auth subrequest's full weight                    (reported)
#   auth-p50        p50 latency of wharf's auth endpoint, one client,
#                   as nginx's subrequest sees it                     (want < 1 ms)
#   public          public 50 MiB downloads, hosting ÷ plain nginx   (want ~1.0)
#   short-latest    /x86/engine redirects (latest, wharf's answer kept
#                   a second) ÷ nginx's own `return 302`             (want >= 0.9)
#   short-pinned    the same with --pin-latest (latest written into the
#                   configuration; a second nginx)                     (want >= 0.9)
#   short-version   /26.1.1/x86/engine redirects (resolved by nginx)
#                   ÷ nginx's own `return 302`                        (want >= 0.9)
#   noise           nginx's `return 302` against itself: how much the
#                   machine's load moves a ratio in this run          (1.00 when quiet)
#   registry-blob   a 50 MiB image layer pulled with a full key through
#                   the recipe (wharf decides, nginx serves the file)
#                   ÷ plain nginx serving the same file               (want >= 0.95)
#   registry-manifest  a manifest GET through the recipe (wharf's
#                   answer), p50 and p99 with 1 and 8 clients, and its
#                   p99 ÷ plain nginx's p99 serving the same file     (want p99 < 2 ms;
#                                                        proposed: ratio <= 2)
#   revoke          how long after `wharf apikey revoke` a key that was
#                   just downloading is refused, through nginx (its auth
#                   cache and wharf's) and by a second wharf serve on the
#                   same database                                     (want < 1 s)
#
# Each figure is printed twice: as throughput, and as work per second of
# server CPU (nginx's workers plus wharf serve), which other load on the
# machine moves far less. ONLY="auth-download short" measures some figures;
# FORMS=cpu (or throughput) one form of the short-URL ones. SPLIT=1 prints,
# for each download run, the CPU ticks of both servers and of wharf alone
# (on stderr).
#
# Needs wrk, nginx, curl and go. Prints one line per figure.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-4}
for tool in wrk nginx curl go; do
  command -v "$tool" >/dev/null || { echo "bench-hosting: $tool is required" >&2; exit 1; }
done

work=$(mktemp -d /tmp/wharf-bench-hosting.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
  wait 2>/dev/null || :
  [ -n "${KEEP:-}" ] || rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"

port() { echo $((20000 + RANDOM % 30000)); }
wait_http() { # URL: wait up to 60 s for a server to answer
  for _ in $(seq 600); do
    curl -s -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "bench-hosting: $1 did not come up" >&2
  exit 1
}
bytes_per_sec() {
  awk '/Transfer\/sec/ { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
    m=1; if (u=="KB") m=1024; if (u=="MB") m=1048576; if (u=="GB") m=1073741824; printf "%.0f\n", v*m }' <<<"$1"
}
reqs_per_sec() { awk '/Requests\/sec/ { printf "%.0f\n", $2 }' <<<"$1"; }
reqs_per_sec_of() { reqs_per_sec "$(run_wrk "$@")"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }
mib() { awk -v a="$1" 'BEGIN { printf "%.0f MiB/s", a / 1048576 }'; }
# us WRK_LATENCY: a wrk latency (12.3us, 1.2ms, 1.0s) in whole µs.
us() { awk -v v="$1" 'BEGIN { u = v; sub(/^[0-9.]+/, "", u); sub(/[a-z]+$/, "", v)
  m = 1; if (u == "ms") m = 1000; if (u == "s") m = 1000000; printf "%.0f\n", v * m }'; }
# p99_us FILE WRK_ARGS...: runs wrk, prints its p99 in µs and appends its
# p50 in µs to FILE.
p99_us() {
  local f=$1 out
  shift
  out=$(run_wrk "$@")
  us "$(awk '/^ +50%/ { print $2 }' <<<"$out")" >>"$f"
  us "$(awk '/^ +99%/ { print $2 }' <<<"$out")"
}
median_us() { sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'; }
# abba: measures the reference (ref_run) and the measured side (mes_run),
# each printing one number, in ROUNDS rounds (default 3) of the order
# ref, measured, measured, ref, so that a machine whose load drifts weighs
# on both alike. Prints the measured and reference means and the median of
# the rounds' ratios.
abba() {
  local i r1 m1 m2 r2 msum=0 rsum=0 ratios=()
  for ((i = 0; i < ${ROUNDS:-3}; i++)); do
    r1=$(ref_run) m1=$(mes_run) m2=$(mes_run) r2=$(ref_run)
    msum=$((msum + m1 + m2)) rsum=$((rsum + r1 + r2))
    ratios+=("$(ratio $((m1 + m2)) $((r1 + r2)))")
  done
  local n=$((2 * ${ROUNDS:-3}))
  echo $((msum / n)) $((rsum / n)) "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" "${ratios[*]}"
}

echo "bench-hosting: building and publishing the bench release into $work" >&2
go build -o "$work/wharf" ./cmd/wharf
wharf=$work/wharf
input=$work/input
bash scripts/demo-inputs.sh "$input" bench >/dev/null
# 50 MiB archives of a basic binary (engine) and of the public one (treasury-cli).
mkdir -p "$work/big"
for name in engine treasury-cli; do
  rm -f "$input/$name-linux-amd64"
  head -c $((50 << 20)) /dev/urandom >"$work/big/$name"
  tar -C "$work/big" -czf "$input/$name-linux-amd64.tar.gz" "$name"
done
# A treasury-node image whose one layer holds 50 MiB of random bytes.
mkdir -p "$work/big/rootfs"
head -c $((50 << 20)) /dev/urandom >"$work/big/rootfs/node"
tar --format=ustar -C "$work/big/rootfs" -cf "$work/big/layer.tar" node
diff_id=$(sha256sum "$work/big/layer.tar" | cut -d' ' -f1)
printf '[{"Config":"config.json","RepoTags":["treasury-node:bench"],"Layers":["layer.tar"]}]\n' >"$work/big/manifest.json"
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}\n' "$diff_id" >"$work/big/config.json"
tar -C "$work/big" -cf "$input/treasury-node-amd64.tar" manifest.json config.json layer.tar
rm -rf "$work/big"
"$wharf" keygen --out "$work/dl.key" >/dev/null
"$wharf" publish --version 26.1.1 --key "$work/dl.key" --store "$work/public" --base-url http://127.0.0.1 "$input" >/dev/null 2>&1
db=$work/wharf.db
"$wharf" org create bench --level full --db "$db" >/dev/null 2>&1
key=$("$wharf" apikey create --org bench --db "$db" | tail -n 1)
auth="Authorization: Basic $(printf '%s:' "$key" | base64 -w0)"
engine=bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz
cli=bin/26.1.1/treasury-cli-26.1.1-linux-amd64.tar.gz
small=bin/26.1.1/signer-26.1.1-linux-amd64.tar.gz
# The registry tree: the 50 MiB layer and the platform manifest of the image.
blob=v2/treasury-node/blobs/sha256:$diff_id
[ -f "$work/public/$blob" ] || { echo "bench-hosting: publish wrote no blob $blob" >&2; exit 1; }
index=v2/treasury-node/manifests/26.1.1
platform=v2/treasury-node/manifests/$(sed -n 's/.*"digest":"\(sha256:[0-9a-f]*\)".*"architecture":"amd64".*/\1/p' "$work/public/$index" | head -n 1)

wport=$(port)
"$wharf" serve --store "$work/public" --listen "127.0.0.1:$wport" --db "$db" \
  --rate-ip 0 --rate-key 0 >/dev/null 2>"$work/wharf.log" &
wharf_pid=$!
pids+=("$wharf_pid")

hport=$(port) nport=$(port)
# nginx's per-key limit on but never reached (wharf's is off): a download
# pays for its count.
"$wharf" hosting nginx --root "$work/public" --upstream "http://127.0.0.1:$wport" \
  --listen "127.0.0.1:$hport" --cache-dir "$work/cache" --auth-cache "$work/auth-cache" \
  --access-log off --rate-key 1000000/s >"$work/hosting.conf"
user=""
if [ "$(id -u)" = 0 ]; then user="user root;"; fi
cat >"$work/nginx.conf" <<CONF
$user
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log off;
  keepalive_requests 100000;
  client_body_temp_path $work/body;
  proxy_temp_path $work/proxy;
  fastcgi_temp_path $work/fastcgi;
  uwsgi_temp_path $work/uwsgi;
  scgi_temp_path $work/scgi;
  include $work/hosting.conf;
  # The reference: the same files, no auth, no wharf.
  server {
    listen 127.0.0.1:$nport;
    root $work/public;
    sendfile on;
    tcp_nopush on;
    absolute_redirect off;
    location = /x86/engine { return 302 /$engine; }
    location / { }
  }
}
CONF
nginx -p "$work" -c "$work/nginx.conf" -g 'daemon off;' 2>"$work/nginx.err" &
nginx_pid=$!
pids+=("$nginx_pid")
# A second nginx with latest written into its configuration (--pin-latest).
pport=$(port)
"$wharf" hosting nginx --root "$work/public" --upstream "http://127.0.0.1:$wport" \
  --listen "127.0.0.1:$pport" --cache-dir "$work/cache2" --auth-cache "$work/auth-cache2" \
  --access-log off --rate-key 1000000/s --pin-latest >"$work/pinned.conf" 2>/dev/null
mkdir -p "$work/n2"
sed -e "s|^pid .*|pid $work/nginx2.pid;|" -e "s|error_log .*|error_log $work/nginx2-error.log;|" \
  -e "s|_temp_path $work/|_temp_path $work/n2/|" -e "s|include $work/hosting.conf;|include $work/pinned.conf;|" \
  -e '/# The reference/,/^  }$/d' "$work/nginx.conf" >"$work/nginx2.conf"
nginx -p "$work" -c "$work/nginx2.conf" -g 'daemon off;' 2>"$work/nginx2.err" &
nginx2_pid=$!
pids+=("$nginx2_pid")
hurl=http://127.0.0.1:$hport nurl=http://127.0.0.1:$nport purl=http://127.0.0.1:$pport
wait_http "http://127.0.0.1:$wport/latest"
wait_http "$hurl/latest"
wait_http "$nurl/latest"
wait_http "$purl/latest"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" "$hurl/$engine")
[ "$code" = 200 ] || { echo "bench-hosting: authenticated download through nginx = $code" >&2; exit 1; }
code=$(curl -s -o /dev/null -w '%{http_code}' "$hurl/$engine")
[ "$code" = 401 ] || { echo "bench-hosting: anonymous download through nginx = $code, want 401" >&2; exit 1; }

loc=$(curl -s -o /dev/null -w '%{http_code} %header{location}' "$purl/x86/engine")
[ "$loc" = "302 /$engine" ] || { echo "bench-hosting: /x86/engine through the pinned nginx = $loc, want 302 /$engine" >&2; exit 1; }

run_wrk() { wrk -d "${DURATION}s" "$@" 2>&1; }
# server_cpu: CPU time of nginx's workers and of wharf so far, in clock
# ticks (wharf works only for the hosting side: its auth answers).
server_cpu() {
  local t=0 w
  for w in $(ps --ppid "$nginx_pid" -o pid=) $(ps --ppid "$nginx2_pid" -o pid=) "$wharf_pid"; do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$w/stat")))
  done
  echo "$t"
}
# per_cpu WRK_ARGS...: requests per second of server CPU (nginx's workers
# and wharf) during a wrk run: the servers' capacity, which other load on
# the machine moves far less than their throughput.
per_cpu() {
  local c0 c1 out n
  c0=$(server_cpu)
  out=$(run_wrk "$@")
  c1=$(server_cpu)
  n=$(awk '/requests in/ { print $1 }' <<<"$out")
  awk -v n="$n" -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" 'BEGIN { if (t == 0) print 0; else printf "%.0f\n", n * hz / t }'
}
# per_cpu_bytes WRK_ARGS...: bytes served per second of server CPU.
per_cpu_bytes() {
  local c0 c1 out w0 w1
  c0=$(server_cpu) w0=$(awk '{ print $14 + $15 }' "/proc/$wharf_pid/stat")
  out=$(run_wrk "$@")
  c1=$(server_cpu) w1=$(awk '{ print $14 + $15 }' "/proc/$wharf_pid/stat")
  [ -z "${SPLIT:-}" ] || echo "  cpu ticks: $((c1 - c0)) in all, wharf $((w1 - w0)), requests: $(awk '/requests in/ { print $1 }' <<<"$out")" >&2
  awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '/requests in/ { v=$(NF-1); u=v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
    m=1; if (u=="KB") m=1024; if (u=="MB") m=1048576; if (u=="GB") m=1073741824;
    if (t == 0) print 0; else printf "%.0f\n", v * m * hz / t }' <<<"$out"
}
# want NAME: whether a figure is measured (ONLY="a b" measures a and b; default all).
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# 1. Authenticated 50 MiB downloads: throughput, and bytes per second of
# server CPU (nginx and wharf).
if want auth-download; then
ref_run() { bytes_per_sec "$(run_wrk -t2 -c8 "$nurl/$engine")"; }
mes_run() { bytes_per_sec "$(run_wrk -t2 -c8 -H "$auth" "$hurl/$engine")"; }
read -r m r med rounds < <(abba)
echo "auth-download 50 MiB (throughput): nginx+auth_request $(mib "$m"), plain nginx $(mib "$r"), ratio $med (rounds: $rounds) (want >= 0.9)"
ref_run() { per_cpu_bytes -t2 -c8 "$nurl/$engine"; }
mes_run() { per_cpu_bytes -t2 -c8 -H "$auth" "$hurl/$engine"; }
read -r m r med rounds < <(abba)
echo "auth-download 50 MiB (cpu): nginx+auth_request $(mib "$m") per CPU s, plain nginx $(mib "$r") per CPU s, ratio $med (rounds: $rounds) (want >= 0.9)"
fi

# 2. Authenticated small downloads: one auth subrequest per download.
if want auth-small; then
size=$(stat -c %s "$work/public/$small")
ref_run() { reqs_per_sec "$(run_wrk -t2 -c32 "$nurl/$small")"; }
mes_run() { reqs_per_sec "$(run_wrk -t2 -c32 -H "$auth" "$hurl/$small")"; }
read -r m r med rounds < <(abba)
echo "auth-small $size B (throughput): nginx+auth_request $m/s, plain nginx $r/s, ratio $med (rounds: $rounds) (reported: every download waits for wharf)"
ref_run() { per_cpu -t2 -c32 "$nurl/$small"; }
mes_run() { per_cpu -t2 -c32 -H "$auth" "$hurl/$small"; }
read -r m r med rounds < <(abba)
echo "auth-small $size B (cpu): nginx+auth_request $m, plain nginx $r downloads per CPU s, ratio $med (rounds: $rounds) (reported)"
fi

# 3. The auth endpoint's latency, one client at a time.
if want auth-p50; then
p=$(run_wrk -t1 -c1 --latency -H "$auth" -H "X-Original-URI: /$engine" "http://127.0.0.1:$wport/_wharf/auth")
p50=$(awk '/^ +50%/ { print $2 }' <<<"$p")
p99=$(awk '/^ +99%/ { print $2 }' <<<"$p")
echo "auth-p50: wharf's auth endpoint p50 $p50, p99 $p99 (want p50 < 1ms)"
fi

# 4. Public 50 MiB downloads.
if want public; then
ref_run() { bytes_per_sec "$(run_wrk -t2 -c8 "$nurl/$cli")"; }
mes_run() { bytes_per_sec "$(run_wrk -t2 -c8 "$hurl/$cli")"; }
read -r m r med rounds < <(abba)
echo "public 50 MiB (throughput): hosting nginx $(mib "$m"), plain nginx $(mib "$r"), ratio $med (rounds: $rounds) (want ~1.0)"
ref_run() { per_cpu_bytes -t2 -c8 "$nurl/$cli"; }
mes_run() { per_cpu_bytes -t2 -c8 "$hurl/$cli"; }
read -r m r med rounds < <(abba)
echo "public 50 MiB (cpu): hosting nginx $(mib "$m") per CPU s, plain nginx $(mib "$r") per CPU s, ratio $med (rounds: $rounds) (want ~1.0)"
fi

# 5 and 6. Short-URL redirects: throughput, and requests per second of
# nginx CPU (the capacity, steadier on a busy machine).
if want short; then
for form in ${FORMS:-throughput cpu}; do
  if [ "$form" = throughput ]; then f=reqs_per_sec_of; unit="/s"; else f=per_cpu; unit=" per CPU s"; fi
  ref_run() { $f -t2 -c64 "$nurl/x86/engine"; }
  mes_run() { $f -t2 -c64 "$hurl/x86/engine"; }
  read -r m r med rounds < <(abba)
  echo "short-latest /x86/engine ($form): hosting nginx $m$unit, nginx return 302 $r$unit, ratio $med (rounds: $rounds) (want >= 0.9)"
  mes_run() { $f -t2 -c64 "$purl/x86/engine"; }
  read -r m r med rounds < <(abba)
  echo "short-pinned /x86/engine with --pin-latest ($form): hosting nginx $m$unit, nginx return 302 $r$unit, ratio $med (rounds: $rounds) (want >= 0.9)"
  mes_run() { $f -t2 -c64 "$hurl/26.1.1/x86/engine"; }
  read -r m r med rounds < <(abba)
  echo "short-version /26.1.1/x86/engine ($form): hosting nginx $m$unit, nginx return 302 $r$unit, ratio $med (rounds: $rounds) (want >= 0.9)"
  # The same measurement on both sides: how far this machine's load moves a ratio.
  mes_run() { ref_run; }
  read -r m r med rounds < <(abba)
  echo "noise ($form): nginx return 302 against itself $m$unit, $r$unit, ratio $med (rounds: $rounds) (1.00 on a quiet machine)"
done
fi

# 7 and 8. The registry: a 50 MiB blob pulled with a full key through the
# recipe (wharf decides, nginx serves the file: X-Accel-Redirect) against
# plain nginx serving the same file; then a manifest GET through the
# recipe (wharf's own answer), one client, its p50 and p99, for the index
# by tag and the platform manifest by digest (a pull, counted).
if want registry-blob; then
code=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" "$hurl/$blob")
[ "$code" = 200 ] || { echo "bench-hosting: the blob through nginx = $code" >&2; exit 1; }
ref_run() { bytes_per_sec "$(run_wrk -t2 -c8 "$nurl/$blob")"; }
mes_run() { bytes_per_sec "$(run_wrk -t2 -c8 -H "$auth" "$hurl/$blob")"; }
read -r m r med rounds < <(abba)
echo "registry-blob 50 MiB (throughput): nginx recipe (wharf decides, nginx serves) $(mib "$m"), plain nginx $(mib "$r"), ratio $med (rounds: $rounds) (want >= 0.95)"
ref_run() { per_cpu_bytes -t2 -c8 "$nurl/$blob"; }
mes_run() { per_cpu_bytes -t2 -c8 -H "$auth" "$hurl/$blob"; }
read -r m r med rounds < <(abba)
echo "registry-blob 50 MiB (cpu): nginx recipe $(mib "$m") per CPU s, plain nginx $(mib "$r") per CPU s, ratio $med (rounds: $rounds) (want >= 0.95)"
fi
if want registry-manifest; then
accept="Accept: application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json"
for m in "$index" "$platform"; do
  code=$(curl -s -o /dev/null -w '%{http_code}' -H "$auth" -H "$accept" "$hurl/$m")
  [ "$code" = 200 ] || { echo "bench-hosting: GET /$m through nginx = $code" >&2; exit 1; }
  for c in 1 8; do
    # The reference: plain nginx serving the manifest's file, no auth (what
    # the machine's load alone puts into a p99), in the same rounds; each
    # run prints its p99 in µs and keeps its p50 in a file.
    : >"$work/p50-recipe" >"$work/p50-nginx"
    mes_run() { p99_us "$work/p50-recipe" -t1 -c"$c" --latency -H "$auth" -H "$accept" "$hurl/$m"; }
    ref_run() { p99_us "$work/p50-nginx" -t1 -c"$c" --latency "$nurl/$m"; }
    read -r mp rp med rounds < <(abba)
    echo "registry-manifest /${m#v2/}, $c client(s): p99 through the recipe ${mp}us, plain nginx's file ${rp}us (means), recipe/nginx p99 $med (rounds: $rounds); p50 $(median_us <"$work/p50-recipe")us and $(median_us <"$work/p50-nginx")us (want p99 < 2ms; proposed: recipe/nginx p99 <= 2)"
  done
done
fi

# 9. Revocation: a key downloading through nginx (whose auth cache and
# wharf's credential cache both hold it) and asking a second wharf serve
# on the same database; the time from the revocation's commit to the
# first 401 on each, polled with curl (a few ms apart).
if want revoke; then
wport2=$(port)
"$wharf" serve --store "$work/public" --listen "127.0.0.1:$wport2" --db "$db" \
  --rate-ip 0 --rate-key 0 >/dev/null 2>"$work/wharf2.log" &
pids+=("$!")
wait_http "http://127.0.0.1:$wport2/latest"
worst=0
for round in 1 2 3; do
  out=$("$wharf" apikey create --org bench --db "$db")
  rkey=$(tail -n 1 <<<"$out")
  rid=$(sed -n 's/^API key \([^ ]*\) for.*/\1/p' <<<"$out")
  rauth="Authorization: Basic $(printf '%s:' "$rkey" | base64 -w0)"
  for _ in 1 2 3; do
    curl -s -o /dev/null -H "$rauth" "$hurl/$small"
    curl -s -o /dev/null -H "$rauth" -H "X-Original-URI: /$small" "http://127.0.0.1:$wport2/_wharf/auth"
  done
  "$wharf" apikey revoke "$rid" --db "$db" >/dev/null
  t0=$(date +%s%N)
  for target in nginx wharf2; do
    while :; do
      if [ "$target" = nginx ]; then
        code=$(curl -s -o /dev/null -w '%{http_code}' -H "$rauth" "$hurl/$small")
      else
        code=$(curl -s -o /dev/null -w '%{http_code}' -H "$rauth" -H "X-Original-URI: /$small" "http://127.0.0.1:$wport2/_wharf/auth")
      fi
      [ "$code" = 401 ] && break
      if [ $(( ($(date +%s%N) - t0) / 1000000 )) -gt 10000 ]; then echo "bench-hosting: $target still answers $code 10 s after the revocation" >&2; exit 1; fi
    done
    ms=$(( ($(date +%s%N) - t0) / 1000000 ))
    echo "revoke round $round: $target refuses the key after $ms ms" >&2
    [ "$ms" -gt "$worst" ] && worst=$ms
  done
done
echo "revoke: a revoked key is refused through nginx and by a second wharf serve on the same database within $worst ms (worst of 3 rounds) (want < 1000 ms)"
fi
