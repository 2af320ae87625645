#!/usr/bin/env bash
# /metrics under load while a sweep runs (issue: exporter safety and load).
#
#   benches/metrics-load.sh [KEYBOX] [PORT]
#
# Starts `kbxscope sweep` on KEYBOX (default: the built-in keybox) with
# --metrics-listen on loopback, waits until /metrics answers, puts wrk on it
# for 10 seconds (2 threads, 8 connections: a bounded load), then runs the
# same sweep without metrics and compares the file events of every size.
# Prints wrk's figures; exits 1 on any wrk error, non-2xx answer, or a
# difference in the sweep's counts. Needs wrk, curl and jq (Debian packages).
set -euo pipefail
keybox=${1:-}
port=${2:-9477}
here=$(cd "$(dirname "$0")/.." && pwd)
bin="$here/target/release/kbxscope"
(cd "$here" && cargo build --release --quiet)
work=$(mktemp -d)
trap 'kill "$sweep" 2>/dev/null || true; rm -rf "$work"' EXIT
sizes=0,16,32,64
args=(sweep ${keybox:+"$keybox"} --sizes "$sizes" --runs 1 --warmup 0)

"$bin" --metrics-listen="127.0.0.1:$port" --linger 3s "${args[@]}" --export-json "$work/loaded.json" \
    > "$work/loaded.txt" 2> "$work/loaded.err" &
sweep=$!
for _ in $(seq 100); do
    curl -fsS "http://127.0.0.1:$port/metrics" > /dev/null 2>&1 && break
    sleep 0.1
done
curl -fsS -o "$work/first.prom" "http://127.0.0.1:$port/metrics" && grep -q '^kbx_build_info' "$work/first.prom" \
    || { echo "no /metrics"; cat "$work/loaded.err"; exit 1; }
wrk -t2 -c8 -d10s --latency "http://127.0.0.1:$port/metrics" | tee "$work/wrk.txt"
still_running=$(kill -0 "$sweep" 2>/dev/null && echo yes || echo no)
wait "$sweep"
"$bin" "${args[@]}" --export-json "$work/calm.json" > /dev/null 2> /dev/null

errors=$(grep -E 'Socket errors|Non-2xx' "$work/wrk.txt" || true)
requests=$(awk '/requests in/ {print $1}' "$work/wrk.txt")
same=$(jq -s '[.[0].results[].events] == [.[1].results[].events]' "$work/loaded.json" "$work/calm.json")
echo "requests: $requests; errors: ${errors:-none}; sweep still running when wrk ended: $still_running"
echo "file events per size, under load: $(jq -c '[.results[].events.total]' "$work/loaded.json")"
echo "file events per size, no metrics: $(jq -c '[.results[].events.total]' "$work/calm.json")"
[ -z "$errors" ] && [ "$same" = true ] && [ "$still_running" = yes ] && echo "ok" || { echo "FAILED"; exit 1; }
