#!/usr/bin/env bash
# The native speech (or realtime) client's cost per request, counted rather than timed: instructions by
# cachegrind (no hardware counters needed, and a shared machine's noise does not move
# them), or system calls, or the kernel's software counters. The client of the peer
# benchmark (`benches/vllm_peer.rs --run-native`) runs in its own process against that
# benchmark's paced raw server (`--serve-raw`, another process, not counted), at two
# request counts; the difference over the extra requests is the marginal cost (start-up
# cancels). BENCHMARKS.md, "Before and after the measurement core (#36)".
#
#   cargo bench -p dfx-bench --bench vllm_peer --no-run   # prints the bench binary's path
#   [TOOL=cachegrind|strace|perf] scripts/cachegrind-peer.sh BIN OUT KIND pooled|fresh|realtime N1 N2 [WARMUPS]
#
# KIND is c=64, c=1, r=50, …; WARMUPS defaults to the concurrency (1 for an open loop).
# realtime: the native realtime client, one `openai-realtime-tts` turn (a WebSocket session)
#   per request, against the zero-delay realtime server (`--serve-realtime-zero`); its body
#   reads are the audio deltas. BENCHMARKS.md, "Scale: streams per core (#38 item 4)".
# SERVER_BIN (default BIN) serves, so two builds' clients can meet one server.
# TOOL=cachegrind (default): user-space instructions; keeps OUT/<kind>-<conn>-<n>.cg and
#   the marginal count by function, OUT/<kind>-<conn>.marginal.cg (`cg_diff` of the two;
#   scripts/cg-by-function.py compares two builds' marginal files by function).
#   CACHE_SIM=yes adds cachegrind's simulated cache misses (I1mr, D1mr, DLmr, …).
# TOOL=strace: system calls by name (`strace -f -c`), the kernel's share of the work.
# TOOL=perf: `perf stat` software counters (task clock, context switches, migrations,
#   page faults, user and system time): noisy on a shared machine, repeat and alternate.
# It prints per count the requests recorded (warmups included) and body reads, then each
# counter's marginal value per request (and instructions per body read).
set -euo pipefail
[ $# -ge 6 ] || { sed -n 2,25p "$0"; exit 2; }
bin=$1 out=$2 kind=$3 conn=$4 n1=$5 n2=$6
warm=${7:-$(case $kind in c=*) echo "${kind#c=}" ;; *) echo 1 ;; esac)}
server_bin=${SERVER_BIN:-$bin}
tool=${TOOL:-cachegrind}
case $tool in cachegrind | strace | perf) ;; *) echo "TOOL is cachegrind, strace or perf, not $tool" >&2; exit 2 ;; esac
mkdir -p "$out"

serve=--serve-raw reads_of='map(.chunk_bytes | length) | add'
if [ "$conn" = realtime ]; then
    serve=--serve-realtime-zero reads_of='map(.turns[].audio_bytes | length) | add'
fi
coproc SERVER { exec "$server_bin" "$serve"; }
server_pid=$SERVER_PID
trap 'exec {SERVER[1]}>&- 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
read -r url <&"${SERVER[0]}"
echo "server $url (pid $server_pid)" >&2

# Runs the client once under $tool and writes "counter value" lines to $1.counts.
measure() {
    local tag=$1
    shift
    case $tool in
    cachegrind)
        valgrind --tool=cachegrind --cache-sim="${CACHE_SIM:-no}" --branch-sim=no \
            --cachegrind-out-file="$out/$tag.cg" "$@" >"$out/$tag.log" 2>&1
        awk '/^events:/ {for (i = 2; i <= NF; i++) ev[i] = ($i == "Ir" ? "instructions" : $i)}
            /^summary:/ {for (i = 2; i <= NF; i++) print ev[i], $i}' "$out/$tag.cg"
        ;;
    strace)
        strace -f -c -o "$out/$tag.strace" "$@" >"$out/$tag.log" 2>&1
        # Columns: % time, seconds, usecs/call, calls, [errors], name.
        awk '$4 ~ /^[0-9]+$/ {print ($NF == "total" ? "syscalls" : $NF), $4}' "$out/$tag.strace"
        ;;
    perf)
        perf stat -x, -o "$out/$tag.perf" \
            -e task-clock,context-switches,cpu-migrations,page-faults,user_time,system_time \
            "$@" >"$out/$tag.log" 2>&1
        awk -F, '$1 ~ /^[0-9.]+$/ {print $3 "_" ($2 == "" ? "n" : $2), $1}' "$out/$tag.perf"
        ;;
    esac >"$out/$tag.counts"
}

declare -A reqs reads
for n in "$n1" "$n2"; do
    tag="$kind-$conn-$n"
    dir="$out/$tag.run"
    rm -rf "$dir" && mkdir -p "$dir"
    measure "$tag" "$bin" --run-native "$dir" "$url" "$kind" "$n" "$warm" "$conn"
    reqs[$n]=$(wc -l <"$dir/records.jsonl")
    reads[$n]=$(jq -s "$reads_of" "$dir/records.jsonl")
    failed=$(jq -s 'map(select(.ok | not)) | length' "$dir/records.jsonl")
    [ "$failed" = 0 ] || { echo "$tag: $failed requests failed (see $dir)" >&2; exit 1; }
    echo "$tag: ${reqs[$n]} requests, ${reads[$n]} body reads" >&2
done
q=$((reqs[$n2] - reqs[$n1])) r=$((reads[$n2] - reads[$n1]))
echo "$kind $conn, per request ($q marginal requests, $(awk -v r=$r -v q=$q 'BEGIN {printf "%.2f", r / q}') body reads each):"
join -a1 -a2 -e0 -o 0,1.2,2.2 <(sort "$out/$kind-$conn-$n1.counts") <(sort "$out/$kind-$conn-$n2.counts") |
    awk -v q="$q" -v r="$r" '{
        d = ($3 - $2) / q
        if (d > 0.05 || d < -0.05) printf (d >= 100 || d <= -100 ? "  %-22s %12.0f\n" : "  %-22s %12.4f\n"), $1, d
        if ($1 == "instructions") printf "  %-22s %12.0f\n", "instructions/body read", ($3 - $2) / r
    }'
if [ "$tool" = cachegrind ]; then
    cg_diff "$out/$kind-$conn-$n1.cg" "$out/$kind-$conn-$n2.cg" >"$out/$kind-$conn.marginal.cg"
fi
