#!/usr/bin/env bash
# Runs a client with COUNT RPC servers of its own: starts rpc_server COUNT times on 127.0.0.1,
# on free ports, waits until each listens, runs CLIENT ARGS... with GALLOC_TEST_RPC_SERVERS=
# HOST:PORT[,HOST:PORT...], and stops the servers by their process ids (also when the client
# fails). Prints the client's report (compare.cmake's format) with each server's count before
# its final "done":
#   size serverN.peak_held BYTES   the most the server held at once in the buffers it
#                                  allocated for the client (weights, KV cache, compute)
#   size serverN.compute BYTES     the compute buffer the client's line "rpc_compute serverN
#                                  BYTES" names, once the server's log shows it allocated it
# The servers' own logs go to LOG_DIR/serverN.log. The client also gets their process ids, in
# GALLOC_TEST_RPC_SERVER_PIDS, to stop one itself. With --max-held BYTES, each server refuses an
# allocation that would make it hold more (rpc_server.cpp).
#
# usage: with_rpc_servers.sh RPC_SERVER COUNT LOG_DIR [--max-held BYTES] CLIENT ARGS...
set -uo pipefail
SERVER=$1 COUNT=$2 LOG_DIR=$3
shift 3
SERVER_ARGS=()
if [[ ${1-} == --max-held ]]; then SERVER_ARGS=("$2"); shift 2; fi
mkdir -p "$LOG_DIR"
MAX_CLIENTS=16 MAX_SECONDS=600  # each server's bounds; one client opens a few connections

pids=()
stop_servers() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null; done
    pids=()
}
trap stop_servers EXIT

# listening: a LISTEN (0A) socket on 127.0.0.1 (0100007F) and the port, in /proc/net/tcp
listening() {
    local hex
    hex=$(printf '0100007F:%04X' "$1")
    awk -v a="$hex" '$2 == a && $4 == "0A" { found = 1 } END { exit !found }' /proc/net/tcp
}

endpoints=()
for ((i = 0; i < COUNT; ++i)); do
    port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])') \
        || { echo "with_rpc_servers.sh: cannot find a free port" >&2; exit 1; }
    "$SERVER" "$port" "$MAX_CLIENTS" "$MAX_SECONDS" "${SERVER_ARGS[@]}" >"$LOG_DIR/server$i.log" 2>&1 &
    pids+=($!)
    for ((tries = 0; tries < 300; ++tries)); do
        listening "$port" && break
        kill -0 "${pids[$i]}" 2>/dev/null || break
        sleep 0.1
    done
    if ! listening "$port"; then
        echo "with_rpc_servers.sh: server$i does not listen on 127.0.0.1:$port; its log:" >&2
        cat "$LOG_DIR/server$i.log" >&2
        exit 1
    fi
    endpoints+=("127.0.0.1:$port")
done

report=$LOG_DIR/client.txt
GALLOC_TEST_RPC_SERVERS=$(IFS=,; echo "${endpoints[*]}") GALLOC_TEST_RPC_SERVER_PIDS=$(IFS=,; echo "${pids[*]}") \
    "$@" >"$report"
rc=$?
stop_servers
if [[ $rc -ne 0 || $(tail -n 1 "$report") != done ]]; then
    cat "$report"
    exit $((rc == 0 ? 1 : rc))
fi
grep -v '^rpc_compute ' "$report" | sed '$d'
while read -r _ server bytes; do
    grep -qx "alloc $bytes" "$LOG_DIR/$server.log" || {
        echo "with_rpc_servers.sh: $server never allocated the $bytes-byte compute buffer the client planned" >&2
        exit 1
    }
    echo "size $server.compute $bytes"
done < <(grep '^rpc_compute ' "$report")
for ((i = 0; i < COUNT; ++i)); do
    awk -v key="server$i.peak_held" '
        $1 == "alloc" { held += $2; if (held > peak) peak = held }
        $1 == "free"  { held -= $2 }
        END { printf "size %s %d\n", key, peak }' "$LOG_DIR/server$i.log"
done
echo done
