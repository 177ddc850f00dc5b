#!/usr/bin/env bash
# galloc over ggml's RPC backend, on the newest ggml npm serves: nodejs-whisper 0.3.1's
# whisper.cpp tree (ggml 0.15.1, with ggml-rpc and talk-llama's llama.cpp).
#
# The tree is built with its own CMake and -DGGML_RPC=ON as npm serves it (stock), then again,
# incrementally, after galloc-rn applied itself in the app (galloc: its ggml-alloc.cpp in place
# of ggml-alloc.c, and a share group around each whisper state). tests/rpc/programs builds the
# clients against both and an RPC server (rpc_server.cpp) against the stock one.
# with_rpc_servers.sh starts the servers for each run on 127.0.0.1 and stops them;
# compare.cmake runs each client as stock, as galloc
# with GALLOC_STRATEGY=ggml and with best (outputs bit-identical, sizes equal with ggml and no
# larger with best, counted on the client and, from what the servers allocate, on the servers):
#   - llama.cpp split by layer over two servers (llama_rpc_client.cpp, a random-weight model at
#     Qwen2.5-0.5B's dimensions): the stock run's logits must also equal the same model's on
#     the local CPU alone, which reads no server's memory;
#   - whisper.cpp with one server as its GPU backend (tests/dropin/whisper_client.cpp), and a
#     fourth run with galloc-rn's share groups, whose compute memory must be smaller, on the
#     client and on the server;
#   - faults: servers without room for the compute buffer (the reserve fails, a smaller context
#     works, no buffer is left in the client), and a server that stops before the reserve or
#     between two computes (ggml-rpc aborts the client, with stock and with galloc).
#
# usage: rpc_test.sh GALLOC_ROOT OUT
set -euo pipefail
ROOT=$(readlink -f "$1") OUT=$2
SPEC=nodejs-whisper@0.3.1
mkdir -p "$OUT"
OUT=$(readlink -f "$OUT")
die() { echo "FAIL: $*" >&2; exit 1; }
step() { echo "-- $*"; }
# shellcheck source=../amalgamation/galloc_rn_app.sh
source "$ROOT/tests/amalgamation/galloc_rn_app.sh"
JOBS=$(nproc)

# build_tree TREE BUILD: the tree's whisper.cpp and ggml with its own CMake, static (so that the
# clients can wrap ggml's functions), with the RPC backend; again after a change, incrementally
build_tree() {
    local tree=$1/cpp/whisper.cpp build=$2
    cmake -S "$tree" -B "$build" -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF -DGGML_RPC=ON \
        -DWHISPER_BUILD_TESTS=OFF -DWHISPER_BUILD_EXAMPLES=OFF >>"$build.log" 2>&1 \
        && cmake --build "$build" -j "$JOBS" --target whisper ggml-rpc >>"$build.log" 2>&1 \
        || { tail -n 20 "$build.log"; die "building $tree failed"; }
}
# As a Node.js app gets it: the package installed and built, then galloc-rn applied and the
# package rebuilt, which compiles only what galloc-rn changed. The first build's libraries are
# kept as the stock ones.
step "building $SPEC's tree as npm serves it (-DGGML_RPC=ON)"
APP=$OUT/app TREE=$OUT/app/node_modules/nodejs-whisper
pack_galloc_rn "$OUT/galloc-rn" || die "cannot pack galloc-rn"
app_with_package "$SPEC" "$APP" || die "cannot install $SPEC in a scratch app"
rm -rf "$OUT/stock" "$OUT/build-stock" "$OUT/build-galloc" "$OUT/build-galloc.log"
build_tree "$TREE" "$OUT/build-galloc"
for lib in src/libwhisper.a ggml/src/libggml.a ggml/src/libggml-cpu.a ggml/src/libggml-base.a \
           ggml/src/ggml-rpc/libggml-rpc.a; do
    mkdir -p "$(dirname "$OUT/build-stock/$lib")"
    cp -p "$OUT/build-galloc/$lib" "$OUT/build-stock/$lib"
done
step "galloc-rn apply, and the tree rebuilt"
apply_galloc_rn "$APP" || die "galloc-rn apply failed on $SPEC"
build_tree "$TREE" "$OUT/build-galloc"
# what galloc-rn changed must be what was compiled again
grep -q 'ggml-alloc.cpp.o' "$OUT/build-galloc.log" || die "the rebuild did not compile galloc-rn's ggml-alloc.cpp"
cmp -s "$OUT/build-stock/src/libwhisper.a" "$OUT/build-galloc/src/libwhisper.a" \
    && die "the rebuild left whisper.cpp as shipped: galloc-rn's share groups are not in it"
step "building the clients and the RPC server"
# $OUT is a cache that outlives the checkout, and CMake refuses a build folder that another
# checkout's source folder configured
grep -qsFx "CMAKE_HOME_DIRECTORY:INTERNAL=$ROOT/tests/rpc/programs" "$OUT/programs/CMakeCache.txt" \
    || rm -rf "$OUT/programs"
cmake -S "$ROOT/tests/rpc/programs" -B "$OUT/programs" -DCMAKE_BUILD_TYPE=Release \
    -DTREE="$TREE/cpp/whisper.cpp" -DSTOCK_BUILD="$OUT/build-stock" -DGALLOC_BUILD="$OUT/build-galloc" \
    >"$OUT/programs.log" 2>&1 \
    && cmake --build "$OUT/programs" -j "$JOBS" >>"$OUT/programs.log" 2>&1 \
    || { tail -n 30 "$OUT/programs.log"; die "building the RPC test's programs failed"; }
P=$OUT/programs

# compare NAME SERVERS CLIENT ARGS [compare.cmake -D...]: the client's runs, each with SERVERS
# servers of its own (with $SERVER_LIMIT, with_rpc_servers.sh's --max-held)
compare() {
    local name=$1 servers=$2 client=$3 args=$4 wrapper
    shift 4
    step "$name: stock, ggml, best${*:+ and shared} over RPC"
    wrapper="$ROOT/tests/rpc/with_rpc_servers.sh;$P/rpc_server;$servers;$OUT/$name/servers"
    [[ -n ${SERVER_LIMIT-} ]] && wrapper+=";--max-held;$SERVER_LIMIT"
    cmake -DSTOCK="$P/${client}_stock" -DGALLOC="$P/${client}_galloc" -DOUT="$OUT/$name" -DARGS="$args" \
        -DEMULATOR="$wrapper" "$@" \
        -P "$ROOT/tests/dropin/compare.cmake" >"$OUT/$name.log" 2>&1 || { tail -n 40 "$OUT/$name.log"; die "$name"; }
    sed -n '2,$p' "$OUT/$name.log" | grep -E '^  [a-zA-Z0-9_]+\.' || true
}

# The exact lines of a run over RPC and of the CPU-only reference must be the same.
same_as_reference() {
    local name=$1 reference=$2
    diff <(grep '^exact ' "$reference") <(grep '^exact ' "$OUT/$name/stock.txt") >"$OUT/$name.reference.diff" \
        || { head -n 10 "$OUT/$name.reference.diff"; die "$name: stock over RPC differs from the local CPU"; }
    echo "ok: $name: stock over RPC computes what the local CPU does ($(grep -c '^exact ' "$reference") outputs)"
}

MODEL=$OUT/qwen2.5-0.5b-random.gguf
step "llama: writing $MODEL; the reference on the local CPU"
"$P/llama_rpc_client_stock" write "$MODEL" >/dev/null || die "cannot write the model"
"$P/llama_rpc_client_stock" cpu "$MODEL" >"$OUT/llama_cpu.txt" || die "the CPU reference run failed"
compare llama 2 llama_rpc_client "rpc;$MODEL"
same_as_reference llama "$OUT/llama_cpu.txt"

# Faults. Servers without room for a 512-token micro-batch's compute buffer (server1 holds 606
# MB of weights and KV cache and would need 313 MB more): the reserve fails with a status, and
# a context with smaller micro-batches then works, as with stock.
SERVER_LIMIT=700000000 compare llama_refused 2 llama_rpc_client "refused;$MODEL"
# A server that stops: ggml-rpc aborts the client at its next command to it, with stock and
# galloc alike (docs/rpc.md).
for mode in gone_at_reserve gone; do
    for variant in stock galloc; do
        run=$OUT/$mode-$variant rc=0
        GGML_NO_BACKTRACE=1 "$ROOT/tests/rpc/with_rpc_servers.sh" "$P/rpc_server" 2 "$run" \
            "$P/llama_rpc_client_$variant" "$mode" "$MODEL" >"$run.txt" 2>"$run.err" || rc=$?
        [[ $rc == 134 ]] && grep -q 'Remote RPC server crashed or returned malformed response' "$run.err" \
            || { tail -n 5 "$run.err"; die "$mode ($variant): expected ggml-rpc's abort, got exit $rc"; }
        case $mode in
            gone_at_reserve) want="" ;;                    # aborted in llama_init_from_model
            gone)            want="step prompt decoded" ;;  # aborted in the next llama_decode
        esac
        [[ $(grep '^step ' "$run.txt" | tail -n 1) == "$want" ]] \
            || { cat "$run.txt"; die "$mode ($variant): aborted after another step than expected"; }
        echo "ok: $mode ($variant): ggml-rpc aborts the client ($(grep -o 'ggml-rpc.cpp:[0-9]*' "$run.err"))"
    done
done

WHISPER_MODEL=$OUT/tiny-whisper.bin
step "whisper: the reference on the local CPU"
"$P/whisper_client_stock" "$WHISPER_MODEL" >"$OUT/whisper_cpu.txt" || die "the CPU reference run failed"
compare whisper 1 whisper_client "$WHISPER_MODEL" -DSHARE_ARGS="$WHISPER_MODEL" \
    "-DSHARE_SMALLER=compute_allocated_peak|server0.peak_held"
same_as_reference whisper "$OUT/whisper_cpu.txt"
echo "ok: $SPEC over RPC"
