#!/usr/bin/env bash
# bench-serve.sh: wharf serve against references measured in the same run,
# on loopback only, each wrk run bounded (DURATION seconds, default 8).
#
#   redirects     short-URL 302s per second: wharf ÷ the Go floor (a bare Go
#                 net/http server answering the same 302, scripts/floor302.go),
#                 the Go floor ÷ nginx `return 302` (what no Go server beats
#                 here), and wharf ÷ nginx; ROUNDS rounds (default 3) of wharf,
#                 floor, nginx, nginx, floor, wharf, each ratio their median;
#                 the same per second of each server's CPU    (proposed: wharf/floor >= 0.75)
#   download      authenticated 50 MiB downloads from the directory store,
#                 bytes per second, wharf vs nginx `sendfile`                 (want >= 0.8)
#   memory        peak RSS of wharf while 100 clients download a 500 MiB
#                 image at once                                               (want < 128 MiB)
#   minio         streaming from MinIO through wharf vs a direct MinIO GET
#                 of the same object, bytes per second: a binary archive and
#                 an image's layer (/v2/.../blobs/...)                        (want >= 0.85)
#   presign       p50 time to the first byte that --presign adds: wharf's
#                 302 to the presigned URL                                    (want < 1 ms)
#
# Needs wrk, nginx (Debian nginx-light), curl, and the pinned MinIO
# (make minio) for the last two. Prints one line per benchmark (and the
# load average before and after each, on stderr). ONLY="redirects minio"
# runs some of them (redirects, download, memory, minio, presign).
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${DURATION:-8}
for tool in wrk nginx curl go; do
  command -v "$tool" >/dev/null || { echo "bench-serve: $tool is required" >&2; exit 1; }
done
MINIO=${WHARF_MINIO:-$(go env GOPATH)/bin/minio}

work=$(mktemp -d /tmp/wharf-bench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || :; done
  wait 2>/dev/null || :
  rm -rf "$work"
}
trap cleanup EXIT
chmod 755 "$work"

port() { echo $((20000 + RANDOM % 30000)); }
wait_http() { # URL: wait up to 30 s for a server to answer
  for _ in $(seq 300); do
    curl -s -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "bench-serve: $1 did not come up" >&2
  exit 1
}
# bytes_per_sec WRK_OUTPUT: Transfer/sec in bytes
bytes_per_sec() {
  awk '/Transfer\/sec/ { v=$2; u=v; sub(/[0-9.]+/, "", u); sub(/[A-Za-z]+$/, "", v);
    m=1; if (u=="KB") m=1024; if (u=="MB") m=1048576; if (u=="GB") m=1073741824; printf "%.0f\n", v*m }' <<<"$1"
}
want() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }
load() { echo "bench-serve: $1: load average $(cut -d' ' -f1-3 /proc/loadavg)" >&2; }
# median: the median of the numbers on stdin, one a line.
median() { sort -n | awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
reqs_per_sec() { awk '/Requests\/sec/ { printf "%.0f\n", $2 }' <<<"$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "n/a"; else printf "%.2f", a / b }'; }
mib() { awk -v a="$1" 'BEGIN { printf "%.0f MiB/s", a / 1048576 }'; }

echo "bench-serve: building and publishing the bench release into $work" >&2
go build -o "$work/wharf" ./cmd/wharf
wharf=$work/wharf
input=$work/input
bash scripts/demo-inputs.sh "$input" bench >/dev/null
# A 50 MiB binary archive and a 500 MiB image, taken as they are (the
# demo's small ones when only the redirects are measured).
if want download || want memory || want minio || want presign; then
rm -f "$input/engine-linux-amd64"
mkdir -p "$work/big"
head -c $((50 << 20)) /dev/urandom >"$work/big/engine"
chmod 755 "$work/big/engine"
tar -C "$work/big" -czf "$input/engine-linux-amd64.tar.gz" engine
# A docker save archive as publish reads it: one layer (a tar of 500 MiB
# of random bytes) named in the config by its digest.
mkdir -p "$work/big/rootfs"
head -c $((500 << 20)) /dev/urandom >"$work/big/rootfs/node"
tar --format=ustar -C "$work/big/rootfs" -cf "$work/big/layer.tar" node
rm -rf "$work/big/rootfs"
printf '[{"Config":"config.json","RepoTags":["treasury-node:bench"],"Layers":["layer.tar"]}]\n' >"$work/big/manifest.json"
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}\n' "$(sha256sum "$work/big/layer.tar" | cut -d' ' -f1)" >"$work/big/config.json"
tar -C "$work/big" -cf "$input/treasury-node-amd64.tar" manifest.json config.json layer.tar
rm -rf "$work/big"
fi

wport=$(port)
url=http://127.0.0.1:$wport
"$wharf" keygen --out "$work/dl.key" >/dev/null
"$wharf" publish --version 26.1.1 --key "$work/dl.key" --store "$work/public" --base-url "$url" "$input" >/dev/null 2>"$work/publish.log" ||
  { cat "$work/publish.log" >&2; echo "bench-serve: publish failed" >&2; exit 1; }
db=$work/wharf.db
"$wharf" org create bench --level full --db "$db" >/dev/null
key=$("$wharf" apikey create --org bench --db "$db" | tail -n 1)
auth="Authorization: Basic $(printf '%s:' "$key" | base64 -w0)"
engine=bin/26.1.1/engine-26.1.1-linux-amd64.tar.gz
node=img/26.1.1/treasury-node-26.1.1-amd64.tar

"$wharf" serve --store "$work/public" --listen "127.0.0.1:$wport" --db "$db" \
  --rate-ip 0 --rate-key 0 >/dev/null 2>"$work/wharf.log" &
wpid=$!
pids+=("$wpid")

nport=$(port)
cat >"$work/nginx.conf" <<EOF
worker_processes 2;
pid $work/nginx.pid;
error_log $work/nginx-error.log;
events { worker_connections 1024; }
http {
  access_log $work/nginx-access.log;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 100000;
  server {
    listen 127.0.0.1:$nport;
    root $work/public;
    location = /x86/engine { return 302 /$engine; }
    location / { }
  }
}
EOF
nginx -p "$work" -c "$work/nginx.conf" -g 'daemon off;' 2>"$work/nginx.err" &
npid=$!
pids+=("$npid")
nurl=http://127.0.0.1:$nport
wait_http "$url/latest"
wait_http "$nurl/latest"

run_wrk() { wrk -d "${DURATION}s" "$@" 2>&1; }

# 1. Redirects: wharf, the Go floor and nginx, in turns (wharf, floor,
# nginx, nginx, floor, wharf: a drifting machine weighs on all alike).
# The floor is what a Go net/http server answering the same 302 reaches:
# wharf ÷ floor is wharf's own cost, floor ÷ nginx the language's.
if want redirects; then
go build -o "$work/floor302" scripts/floor302.go
fport=$(port)
"$work/floor302" -listen "127.0.0.1:$fport" -location "/$engine" 2>"$work/floor.log" &
fpid=$!
pids+=("$fpid")
furl=http://127.0.0.1:$fport
wait_http "$furl/"
[ "$(curl -s -o /dev/null -w '%{http_code} %{redirect_url}' "$url/x86/engine")" = "302 $url/$engine" ] ||
  { echo "bench-serve: wharf's /x86/engine is not a 302 to /$engine" >&2; exit 1; }
# cpu_ticks PID...: the CPU ticks the processes and their children
# (nginx's workers) have used.
cpu_ticks() {
  local p t=0
  for p in "$@" $(ps -o pid= --ppid "$*" 2>/dev/null); do
    t=$((t + $(awk '{ print $14 + $15 }' "/proc/$p/stat")))
  done
  echo "$t"
}
# rps URL PID: 302s a second from URL/x86/engine, and 302s a second of the
# server's CPU (PID and its children), which other load moves far less.
rps() {
  local c0 c1 out
  c0=$(cpu_ticks "$2")
  out=$(wrk -d "${REDIRECT_DURATION:-5}s" -t2 -c64 "$1/x86/engine" 2>&1)
  c1=$(cpu_ticks "$2")
  awk -v t=$((c1 - c0)) -v hz="$(getconf CLK_TCK)" '/requests in/ { n = $1 } /Requests\/sec/ { r = $2 }
    END { printf "%.0f %.0f\n", r, t ? n * hz / t : 0 }' <<<"$out"
}
load redirects
wf=() fn=() wn=() cwf=() cfn=() ws=0 fs=0 ns=0 cws=0 cfs=0 cns=0
for ((i = 0; i < ${ROUNDS:-3}; i++)); do
  read -r w1 cw1 < <(rps "$url" "$wpid")
  read -r f1 cf1 < <(rps "$furl" "$fpid")
  read -r n1 cn1 < <(rps "$nurl" "$npid")
  read -r n2 cn2 < <(rps "$nurl" "$npid")
  read -r f2 cf2 < <(rps "$furl" "$fpid")
  read -r w2 cw2 < <(rps "$url" "$wpid")
  ws=$((ws + w1 + w2)) fs=$((fs + f1 + f2)) ns=$((ns + n1 + n2))
  cws=$((cws + cw1 + cw2)) cfs=$((cfs + cf1 + cf2)) cns=$((cns + cn1 + cn2))
  wf+=("$(ratio $((w1 + w2)) $((f1 + f2)))")
  fn+=("$(ratio $((f1 + f2)) $((n1 + n2)))")
  wn+=("$(ratio $((w1 + w2)) $((n1 + n2)))")
  cwf+=("$(ratio $((cw1 + cw2)) $((cf1 + cf2)))")
  cfn+=("$(ratio $((cf1 + cf2)) $((cn1 + cn2)))")
  echo "bench-serve: redirects round $i: wharf $w1 $w2, floor $f1 $f2, nginx $n1 $n2 req/s; per CPU s: wharf $cw1 $cw2, floor $cf1 $cf2, nginx $cn1 $cn2" >&2
done
load redirects
n=$((2 * ${ROUNDS:-3}))
echo "redirects (throughput): wharf $((ws / n)) req/s, Go floor $((fs / n)) req/s, nginx return 302 $((ns / n)) req/s; wharf/floor $(printf '%s\n' "${wf[@]}" | median) (rounds: ${wf[*]}), floor/nginx $(printf '%s\n' "${fn[@]}" | median) (rounds: ${fn[*]}), wharf/nginx $(printf '%s\n' "${wn[@]}" | median) (rounds: ${wn[*]})"
echo "redirects (cpu): wharf $((cws / n)), Go floor $((cfs / n)), nginx $((cns / n)) 302s per CPU s; wharf/floor $(printf '%s\n' "${cwf[@]}" | median) (rounds: ${cwf[*]}), floor/nginx $(printf '%s\n' "${cfn[@]}" | median) (rounds: ${cfn[*]})"
fi

# 2. Authenticated 50 MiB downloads from the directory store.
if want download; then
w=$(run_wrk -t2 -c8 -H "$auth" "$url/$engine")
n=$(run_wrk -t2 -c8 "$nurl/$engine")
wb=$(bytes_per_sec "$w") nb=$(bytes_per_sec "$n")
echo "download 50 MiB: wharf $(mib "$wb"), nginx $(mib "$nb"), ratio $(ratio "$wb" "$nb") (want >= 0.8)"
fi

# 3. Memory while 100 clients download a 500 MiB image.
if want memory; then
w=$(run_wrk -t2 -c100 -H "$auth" "$url/$node")
hwm=$(awk '/VmHWM/ { printf "%.0f", $2 / 1024 }' "/proc/$wpid/status")
echo "memory: peak RSS $hwm MiB with 100 clients on a 500 MiB image, $(mib "$(bytes_per_sec "$w")") served (want < 128 MiB)"
fi

want minio || want presign || exit 0

# 4 and 5: MinIO.
if [ ! -x "$MINIO" ]; then
  if [ "${WHARF_REQUIRE_ALL:-}" = 1 ]; then
    echo "bench-serve: $MINIO missing (make minio)" >&2
    exit 1
  fi
  echo "minio: skipped ($MINIO missing: make minio)"
  echo "presign: skipped"
  exit 0
fi
mport=$(port)
murl=http://127.0.0.1:$mport
export AWS_ACCESS_KEY_ID=wharfbench AWS_SECRET_ACCESS_KEY=wharfbench-secret AWS_REGION=us-east-1
MINIO_ROOT_USER=$AWS_ACCESS_KEY_ID MINIO_ROOT_PASSWORD=$AWS_SECRET_ACCESS_KEY MINIO_BROWSER=off \
  "$MINIO" server "$work/minio" --address "127.0.0.1:$mport" --console-address "127.0.0.1:$(port)" --quiet >/dev/null 2>&1 &
pids+=($!)
wait_http "$murl/minio/health/ready"
curl -fsS -X PUT --aws-sigv4 "aws:amz:us-east-1:s3" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" "$murl/bench" >/dev/null
# 50 MiB is enough here: an image whose one layer is 50 MiB of random bytes.
mkdir -p "$work/img/rootfs"
head -c $((50 << 20)) /dev/urandom >"$work/img/rootfs/node"
tar --format=ustar -C "$work/img/rootfs" -cf "$work/img/layer.tar" node
diff_id=$(sha256sum "$work/img/layer.tar" | cut -d' ' -f1)
printf '[{"Config":"config.json","RepoTags":["treasury-node:bench"],"Layers":["layer.tar"]}]\n' >"$work/img/manifest.json"
printf '{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:%s"]}}\n' "$diff_id" >"$work/img/config.json"
tar -C "$work/img" -cf "$input/treasury-node-amd64.tar" manifest.json config.json layer.tar
rm -rf "$work/img"
blob=v2/treasury-node/blobs/sha256:$diff_id
"$wharf" publish --version 26.1.1 --key "$work/dl.key" --store s3://bench --s3-endpoint "$murl" \
  --base-url "$url" "$input" >/dev/null 2>"$work/publish-s3.log" ||
  { cat "$work/publish-s3.log" >&2; echo "bench-serve: publish to MinIO failed" >&2; exit 1; }

sport=$(port) pport=$(port)
"$wharf" serve --store s3://bench --s3-endpoint "$murl" --listen "127.0.0.1:$sport" --db "$db" \
  --rate-ip 0 --rate-key 0 >/dev/null 2>"$work/wharf-s3.log" &
pids+=($!)
"$wharf" serve --store s3://bench --s3-endpoint "$murl" --listen "127.0.0.1:$pport" --db "$db" \
  --rate-ip 0 --rate-key 0 --presign >/dev/null 2>"$work/wharf-presign.log" &
pids+=($!)
wait_http "http://127.0.0.1:$sport/latest"
wait_http "http://127.0.0.1:$pport/latest"
presigned=$(curl -s -o /dev/null -w '%{redirect_url}' -H "$auth" "http://127.0.0.1:$pport/$engine")

# direct PATH: a direct GET of PATH's object from MinIO, at a presigned URL
# wharf serve --presign gives for it (fresh: they expire), bytes/s.
direct() {
  local u
  u=$(curl -s -o /dev/null -w '%{redirect_url}' -H "$auth" "http://127.0.0.1:$pport/$1")
  bytes_per_sec "$(run_wrk -t2 -c8 "$u")"
}
# abba_minio PATH: ROUNDS rounds (default 3) of direct, wharf, wharf,
# direct, so that a drifting machine weighs on both alike; prints the
# means and the median of the rounds' ratios.
abba_minio() {
  local i r1 m1 m2 r2 msum=0 rsum=0 ratios=()
  for ((i = 0; i < ${ROUNDS:-3}; i++)); do
    r1=$(direct "$1")
    m1=$(bytes_per_sec "$(run_wrk -t2 -c8 -H "$auth" "http://127.0.0.1:$sport/$1")")
    m2=$(bytes_per_sec "$(run_wrk -t2 -c8 -H "$auth" "http://127.0.0.1:$sport/$1")")
    r2=$(direct "$1")
    msum=$((msum + m1 + m2)) rsum=$((rsum + r1 + r2))
    ratios+=("$(ratio $((m1 + m2)) $((r1 + r2)))")
  done
  local n=$((2 * ${ROUNDS:-3}))
  echo $((msum / n)) $((rsum / n)) "$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }')" "${ratios[*]}"
}
if want minio; then
load minio
read -r wb db_ med rounds < <(abba_minio "$engine")
echo "minio 50 MiB: through wharf $(mib "$wb"), direct GET $(mib "$db_"), ratio $med (rounds: $rounds) (want >= 0.85)"

# The registry's 50 MiB layer: wharf streaming it against a direct GET of
# its presigned URL (what wharf serve --presign redirects a pull to).
presigned=$(curl -s -o /dev/null -w '%{redirect_url}' -H "$auth" "http://127.0.0.1:$pport/$blob")
[ -n "$presigned" ] || { echo "bench-serve: no presigned URL for /$blob" >&2; exit 1; }
read -r wb db_ med rounds < <(abba_minio "$blob")
echo "minio registry blob 50 MiB: through wharf $(mib "$wb"), direct GET $(mib "$db_"), ratio $med (rounds: $rounds) (want >= 0.85)"
load minio
fi

want presign || exit 0
p=$(run_wrk -t1 -c1 --latency -H "$auth" "http://127.0.0.1:$pport/$engine")
p50=$(awk '/^ +50%/ { print $2 }' <<<"$p")
echo "presign: p50 of wharf's 302 to the presigned URL $p50 (the time --presign adds to the first byte; want < 1ms)"
