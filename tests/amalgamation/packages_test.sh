#!/usr/bin/env bash
# The one-file drop-in inside the packages' ggml as an app gets it: galloc-rn, packed as npm
# packs it, applies itself to each package's tarball in a scratch app, and the files it wrote
# there are what is built, byte for byte: its renamed ggml-alloc.cpp in place of ggml-alloc.c,
# which clang builds into the package's prefixed ggml (lm_ggml_, wsp_ggml_) with the package's
# Android flags, and build.sh's smoke test runs. Then the package's real client, whisper.cpp or
# llama.cpp, built from the same prefixed sources, runs the drop-in tests' client
# (tests/dropin/*_client.cpp, renamed like an app's code) on the package as shipped and on the
# package as galloc-rn patched it (compare.cmake: outputs bit-identical, buffers equal with
# GALLOC_STRATEGY=ggml and no larger with best; for whisper.rn a fourth run with the patched
# whisper.cpp's own share group around each state, whose buffers must be smaller). Last,
# whisper.rn's whisper.cpp and llama.rn's llama.cpp, with their renamed drop-ins, link into one
# program and both clients run in it.
#
# With --abi, the same for another ABI the packages ship, cross-built as their Android builds
# build it (Debian's cross compilers, statically linked) and run under qemu-user: aarch64 (-march=armv8.2-a+fp16, the arm sources), armhf (-march=armv7-a
# -mfpu=neon-vfpv4, the arm sources) and i686 (generic CPU code). Its builds go to
# OUT_ROOT/ABI/, and it has no two-package program.
#
# usage: packages_test.sh [--abi aarch64|armhf|i686] GALLOC_ROOT OUT_ROOT NPM_SPEC...
#   the first whisper.rn and the first llama.rn spec make the two-package program
set -euo pipefail

ABI=""
if [[ ${1-} == --abi ]]; then ABI=$2; shift 2; fi
ROOT=$1 OUT_ROOT=$2
shift 2
mkdir -p "$OUT_ROOT"

export CC=clang CXX=clang++ GALLOC_GGML_AS_SHIPPED=1
EMULATOR=()     # runs the ABI's programs
LINK_FLAGS=()   # links them
BUILD_ROOT=$OUT_ROOT
case $ABI in
    "") ;;
    aarch64) CC=aarch64-linux-gnu-gcc CXX=aarch64-linux-gnu-g++ EMULATOR=(qemu-aarch64)
             export GALLOC_GGML_CPU_ARCH=arm GALLOC_GGML_EXTRA_CFLAGS="-march=armv8.2-a+fp16" ;;
    armhf)   CC=arm-linux-gnueabihf-gcc CXX=arm-linux-gnueabihf-g++ EMULATOR=(qemu-arm)
             export GALLOC_GGML_CPU_ARCH=arm GALLOC_GGML_EXTRA_CFLAGS="-march=armv7-a -mfpu=neon-vfpv4" ;;
    # qemu-i386 too: a kernel without IA32 emulation (as in containers) cannot run i686 code
    i686)    CC=i686-linux-gnu-gcc CXX=i686-linux-gnu-g++ EMULATOR=(qemu-i386)
             export GALLOC_GGML_CPU_ARCH=generic GALLOC_GGML_EXTRA_CFLAGS="" ;;
    *) echo "packages_test.sh: unknown ABI '$ABI'; use aarch64, armhf or i686" >&2; exit 2 ;;
esac
if [[ -n $ABI ]]; then
    for tool in "$CC" "$CXX" "${EMULATOR[@]}"; do
        command -v "$tool" >/dev/null || { echo "FAIL: $tool is missing (make deps installs it)"; exit 1; }
    done
    LINK_FLAGS=(-static)
    BUILD_ROOT=$OUT_ROOT/$ABI
    export GALLOC_GGML_LDFLAGS=-static GALLOC_GGML_RUN="${EMULATOR[*]}"
fi
# package_rename, for the client (an app's own code is renamed like ggml's)
die() { echo "FAIL: $*" >&2; exit 1; }
step() { :; }

# shellcheck source=galloc_rn_app.sh
source "$(dirname "$0")/galloc_rn_app.sh"
pack_galloc_rn "$BUILD_ROOT/galloc-rn" || exit 1

# client SPEC OUT: the package's whisper.cpp or llama.cpp and the drop-in tests' client for it
client() {
    local spec=$1 out=$2 app=$3 name builder tests=tests/dropin
    local -a wraps compare_args=()
    case $spec in
        whisper.rn@*) name=whisper_client builder=build-whisper.sh
                      wraps=(ggml_backend_sched_graph_compute ggml_backend_sched_get_buffer_size
                             ggml_backend_alloc_ctx_tensors ggml_backend_alloc_ctx_tensors_from_buft
                             ggml_backend_buft_alloc_buffer ggml_backend_buffer_free)
                      # and a fourth run with a whisper state's graphs on one shared buffer
                      compare_args=(-DSHARE_SMALLER=compute_allocated_peak) ;;
        *)            name=llama_client builder=build-llama.sh
                      wraps=(ggml_backend_sched_get_buffer_size) ;;
    esac
    # the 2023 ggml (ggml_allocr_*): its own client, at whisper tiny's dimensions
    if grep -q ggml_allocr_new "$out/include/ggml-alloc.h"; then
        tests=tests/api_2023
        wraps=(ggml_backend_graph_compute ggml_allocr_max_size ggml_allocr_new_from_buffer)
        compare_args=(-DGGML_SIZES=ANY)
    fi
    local lib=${builder#build-}; lib=${lib%.sh}
    "$ROOT/integrations/ggml/$builder" "$spec" "$out" >"$out/$lib-build.log" 2>&1 \
        || { tail -n 20 "$out/$lib-build.log"; return 1; }
    (
        NPM_SPEC=$spec
        # shellcheck source=../../integrations/ggml/package.sh
        source "$ROOT/integrations/ggml/package.sh"
        mkdir -p "$out/client"
        package_rename "$ROOT/$tests/$name.cpp" "$out/client/$name.cpp"
        package_rename "$ROOT/tests/dropin/test_support.hpp" "$out/client/test_support.hpp"
        package_rename "$ROOT/tests/dropin/whisper_model.hpp" "$out/client/whisper_model.hpp"
        package_rename "$ROOT/tests/dropin/llama_model.hpp" "$out/client/llama_model.hpp"
        package_rename "$ROOT/tests/dropin/sched_buffer_sizes.hpp" "$out/client/sched_buffer_sizes.hpp"
        local -a link=()
        local w
        for w in "${wraps[@]}"; do
            package_rename <(echo "$w") "$out/client/wrap"
            link+=("-Wl,--wrap=$(cat "$out/client/wrap")")
        done
        # galloc-rn's whisper.cpp (a share group around each state), compiled as build-whisper.sh
        # compiled the package's own, for the package as patched
        local patched_lib=$out/$lib/lib$lib.a patched=$app/node_modules/${spec%@*}/cpp/$lib.cpp
        if [[ $lib == whisper ]] && grep -q whisper_init_state_unshared "$patched"; then
            local -a flags
            read -r -a flags <<<"$(sed -n 's/^flags=//p' "$out/$lib/.lib$lib.stamp")"
            "$CXX" "${flags[@]}" -c "$patched" -o "$out/client/$lib-patched.o" || exit 1
            patched_lib=$out/client/$lib-patched.o
        fi
        # compiled once, linked with each library
        "$CXX" -std=c++17 -O1 -I"$out/client" -isystem "$out/$lib/include" -isystem "$out/include" \
            -c "$out/client/$name.cpp" -o "$out/client/$name.o" || exit 1
        local kind library
        for kind in stock galloc; do
            library=$out/$lib/lib$lib.a
            [[ $kind == galloc ]] && library=$patched_lib
            "$CXX" "$out/client/$name.o" "$library" "$out/libggml-$kind.a" -lpthread -lm -ldl \
                "${link[@]}" "${LINK_FLAGS[@]}" -o "$out/client/${name}_$kind" || exit 1
        done
    ) >"$out/client.log" 2>&1 || { tail -n 20 "$out/client.log"; return 1; }
    local args=$out/client/run/tiny-whisper.bin
    [[ $name == llama_client ]] && args=$out/client/run/tiny-llama.gguf
    [[ $tests == tests/api_2023 ]] && args+=";tiny"
    # the shared run: the patched whisper.cpp opens the share groups itself
    if [[ $name == whisper_client && $tests != tests/api_2023 ]]; then
        grep -q whisper_init_state_unshared "$app/node_modules/${spec%@*}/cpp/whisper.cpp" \
            || { echo "galloc-rn did not open a share group in whisper.cpp"; return 1; }
        compare_args+=("-DSHARE_ARGS=$args")
    fi
    local emulator
    emulator=$(IFS=';'; echo "${EMULATOR[*]}")
    cmake -DSTOCK="$out/client/${name}_stock" -DGALLOC="$out/client/${name}_galloc" -DOUT="$out/client/run" \
        -DARGS="$args" -DEMULATOR="$emulator" "${compare_args[@]}" -P "$ROOT/tests/dropin/compare.cmake" \
        >"$out/compare.log" 2>&1 \
        || { tail -n 30 "$out/compare.log"; return 1; }
    echo "ok: $spec${ABI:+ ($ABI)}: $lib.cpp $(grep -m1 'exact facts' "$out/compare.log" | sed 's/^-- //'), buffers:"
    sed -n '2,$p' "$out/compare.log" | grep -E '^  [a-z_]+\.' | head -n 16
}

# compute_memory_wraps DIR: the linker flags for compute_memory.hpp's wrappers, with ggml's
# names as the package has them (package.sh sourced)
compute_memory_wraps() {
    local w
    for w in ggml_backend_buft_alloc_buffer ggml_backend_buffer_set_usage ggml_backend_buffer_free; do
        package_rename <(echo "$w") "$1/wrap"
        echo "-Wl,--wrap=$(cat "$1/wrap")"
    done
}

# llama_share_check SPEC OUT APP: the members of one llama.rn context in a share group
# (tests/dropin/llama_share_client.cpp) on the package's llama.cpp with galloc-rn's
# llama-context.cpp, compiled as build-llama.sh compiled the package's own and linked in its
# place (libllama.a holds it as an object of its own), the group opened by galloc-rn's helper
# cut from its rn-llama.cpp, which must itself compile against the package's headers.
# compare.cmake: every logit as stock's, with and without the group, and the compute peak
# smaller with it. Returns 2 where galloc-rn does not edit llama-context.cpp.
llama_share_check() {
    local spec=$1 out=$2 app=$3 dir=$2/llama_share patched rn
    local pkg=$app/node_modules/${spec%@*}
    patched=$(grep -rl --include=llama-context.cpp 'galloc_rn_join(this)' "$pkg" | head -n1)
    [[ -n $patched ]] || return 2
    rn=$pkg/cpp/rn-llama.cpp
    grep -q galloc_rn_in_context_group "$rn" || { echo "galloc-rn did not open a share group in $rn"; return 1; }
    rm -rf "$dir" && mkdir -p "$dir"
    sed -n "/^\/\/ galloc-rn: a llama.rn context's llama.cpp contexts in one share group\./,/^\/\/ galloc-rn: end of the share group helper\.\$/p" \
        "$rn" >"$dir/rn_llama_group.hpp"
    (
        NPM_SPEC=$spec
        # shellcheck source=../../integrations/ggml/package.sh
        source "$ROOT/integrations/ggml/package.sh"
        for f in llama_share_client.cpp llama_share_group.hpp test_support.hpp llama_model.hpp compute_memory.hpp; do
            package_rename "$ROOT/tests/dropin/$f" "$dir/$f"
        done
        local -a flags link
        local w kind context helper
        mapfile -t link < <(compute_memory_wraps "$dir")
        read -r -a flags <<<"$(sed -n 's/^flags=//p' "$out/llama/.libllama.stamp")"
        "$CXX" "${flags[@]}" -c "$patched" -o "$dir/llama-context-patched.o" || exit 1
        local -a rn_includes=()
        for w in cpp cpp/common cpp/tools/mtmd vendor vendor/llama.cpp vendor/llama.cpp/include \
                 vendor/llama.cpp/common vendor/llama.cpp/ggml/include vendor/llama.cpp/tools/mtmd vendor/llama.cpp/src; do
            [[ -d $pkg/$w ]] && rn_includes+=("-I$pkg/$w")
        done
        "$CXX" -std=c++17 -fsyntax-only "${rn_includes[@]}" "$rn" || exit 1
        for kind in stock galloc; do
            context=() helper=()
            [[ $kind == galloc ]] && context=("$dir/llama-context-patched.o") helper=(-DGALLOC_RN_LLAMA_GROUP='"rn_llama_group.hpp"')
            "$CXX" -std=c++17 -O1 "${helper[@]}" -I"$dir" -isystem "$out/llama/include" -isystem "$out/include" \
                -c "$dir/llama_share_client.cpp" -o "$dir/llama_share_client_$kind.o" || exit 1
            "$CXX" "$dir/llama_share_client_$kind.o" "${context[@]}" "$out/llama/libllama.a" "$out/libggml-$kind.a" \
                -lpthread -lm -ldl "${link[@]}" "${LINK_FLAGS[@]}" -o "$dir/llama_share_client_$kind" || exit 1
        done
    ) >"$dir.log" 2>&1 || { tail -n 20 "$dir.log"; return 1; }
    local model=$dir/run/tiny-llama.gguf
    cmake -DSTOCK="$dir/llama_share_client_stock" -DGALLOC="$dir/llama_share_client_galloc" -DOUT="$dir/run" \
        -DARGS="$model" -DSHARE_ARGS="$model;share" -DSHARE_SMALLER=compute_peak \
        -P "$ROOT/tests/dropin/compare.cmake" >"$dir/compare.log" 2>&1 || { tail -n 30 "$dir/compare.log"; return 1; }
    echo "ok: $spec: a llama.rn context's members in one share group: $(grep -m1 'exact facts' "$dir/compare.log" | sed 's/^-- //'), compute peak $(sed -n 's/^size llama_share.compute_peak //p' "$dir/run/stock.txt") (stock), $(sed -n 's/^size llama_share.compute_peak //p' "$dir/run/shared.txt") (shared)"
    # both, so that one member's failure does not hide the other's result
    local members=0
    mtmd_share_check "$spec" "$out" "$dir" || members=1
    mtp_share_check "$spec" "$out" "$dir" || members=1
    # at real dimensions on llama.rn's two versions only: about 50 s each, and cui-llama.rn's
    # members run in the checks above
    [[ $spec != llama.rn@* ]] || real_share_check "$spec" "$out" "$dir" || members=1
    return "$members"
}

# member_clients SPEC OUT DIR MDIR CLIENT FILES [-- CXXFLAGS... [-- LIBS...]]: tests/dropin/CLIENT
# (with FILES, renamed for the package into DIR) built as MDIR/client_stock and
# MDIR/client_galloc, the latter with llama_share_check's patched llama-context.cpp and helper
# in DIR. CXXFLAGS and LIBS come before the package's llama.cpp and ggml.
member_clients() {
    local spec=$1 out=$2 dir=$3 mdir=$4 client=$5 files=$6
    shift 6
    local -a cxxflags=() libs=()
    [[ ${1-} == -- ]] && shift
    while [[ $# -gt 0 && $1 != -- ]]; do cxxflags+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    libs=("$@")
    rm -rf "$mdir" && mkdir -p "$mdir"
    (
        NPM_SPEC=$spec
        # shellcheck source=../../integrations/ggml/package.sh
        source "$ROOT/integrations/ggml/package.sh"
        local f kind
        for f in "$client" $files; do package_rename "$ROOT/tests/dropin/$f" "$dir/$f"; done
        local -a link context helper
        mapfile -t link < <(compute_memory_wraps "$mdir")
        for kind in stock galloc; do
            context=() helper=()
            [[ $kind == galloc ]] && context=("$dir/llama-context-patched.o") helper=(-DGALLOC_RN_LLAMA_GROUP='"rn_llama_group.hpp"')
            "$CXX" -std=c++17 -O1 "${helper[@]}" -I"$dir" "${cxxflags[@]}" -isystem "$out/llama/include" \
                -isystem "$out/include" -c "$dir/$client" -o "$mdir/client_$kind.o" || exit 1
            "$CXX" "$mdir/client_$kind.o" "${context[@]}" "${libs[@]}" "$out/llama/libllama.a" \
                "$out/libggml-$kind.a" -lpthread -lm -ldl "${link[@]}" -o "$mdir/client_$kind" || exit 1
        done
    ) >"$mdir.log" 2>&1 || { tail -n 20 "$mdir.log"; return 1; }
}

# member_compare MDIR RUN PREFIX WHAT ARG...: compare.cmake on member_clients' programs with
# ARGs (and "share" after them for the shared run), then the shared run's compute peak
# (PREFIX.compute_peak) must be no more than the largest compute buffer of the unshared best run
# (PREFIX.largest_buffer), the largest member's need: nothing is carried between the members.
member_compare() {
    local mdir=$1 run=$2 prefix=$3 what=$4 stock shared largest args
    shift 4
    args=$(IFS=';'; echo "$*")
    cmake -DSTOCK="$mdir/client_stock" -DGALLOC="$mdir/client_galloc" -DOUT="$run" \
        -DARGS="$args" -DSHARE_ARGS="$args;share" -DSHARE_SMALLER=compute_peak \
        -P "$ROOT/tests/dropin/compare.cmake" >"$run.log" 2>&1 || { tail -n 30 "$run.log"; return 1; }
    stock=$(sed -n "s/^size $prefix.compute_peak //p" "$run/stock.txt")
    shared=$(sed -n "s/^size $prefix.compute_peak //p" "$run/shared.txt")
    largest=$(sed -n "s/^size $prefix.largest_buffer //p" "$run/best.txt")
    [[ -n $shared && -n $largest && $shared -le $largest ]] \
        || { echo "$what: the shared compute peak ($shared) is more than the largest member's need ($largest)"; return 1; }
    echo "$what in one share group: $(grep -m1 'exact facts' "$run.log" | sed 's/^-- //'), compute peak $stock (stock), $shared (shared), the largest member's $largest"
}

# mtmd_share_check SPEC OUT DIR: the target and mtmd's encoder in one share group
# (tests/dropin/llama_mtmd_share_client.cpp), with a vision and then an audio projector, on the
# package's mtmd (build-mtmd.sh). compare.cmake: embeddings and logits as stock's, the compute
# peak smaller with the group, and no more than the largest member's need (member_compare).
mtmd_share_check() {
    local spec=$1 out=$2 dir=$3 mdir=$3/mtmd kind line
    "$ROOT/integrations/ggml/build-mtmd.sh" "$spec" "$out" >"$out/mtmd-build.log" 2>&1 \
        || { tail -n 20 "$out/mtmd-build.log"; return 1; }
    member_clients "$spec" "$out" "$dir" "$mdir" llama_mtmd_share_client.cpp "mmproj_model.hpp model_writer.hpp" \
        -- -isystem "$out/mtmd/include" -- "$out/mtmd/libmtmd.a" || return 1
    for kind in vision audio; do
        line=$(member_compare "$mdir" "$mdir/$kind" llama_mtmd "the target and mtmd's $kind encoder" \
            "$mdir/$kind/tiny-llama.gguf" "$mdir/$kind/tiny-mmproj.gguf" "$kind") || { echo "$line"; return 1; }
        echo "ok: $spec: $line"
    done
}

# mtp_share_check SPEC OUT DIR: the target and its MTP draft in one share group
# (tests/dropin/llama_mtp_share_client.cpp: a Qwen3.5 model with its MTP head, run as llama.cpp's
# draft-mtp speculative decoding runs it). compare.cmake: logits and hidden states as stock's,
# the compute peak smaller with the group, and no more than the largest member's need
# (member_compare): the draft reads the target's hidden states from host memory.
mtp_share_check() {
    local spec=$1 out=$2 dir=$3 mdir=$3/mtp line
    # build-llama.sh installs llama-ext.h (the MTP calls) beside llama.h
    [[ -f $out/llama/include/llama-ext.h ]] || { echo "no llama-ext.h in $out/llama/include"; return 1; }
    member_clients "$spec" "$out" "$dir" "$mdir" llama_mtp_share_client.cpp \
        "mtp_model.hpp mtp_speculation.hpp model_writer.hpp" || return 1
    line=$(member_compare "$mdir" "$mdir/run" llama_mtp "the target and its MTP draft" "$mdir/run/tiny-qwen35-mtp.gguf") \
        || { echo "$line"; return 1; }
    echo "ok: $spec: $line"
}

# real_share_check SPEC OUT DIR: the same pairs at real dimensions, created but not run
# (tests/dropin/llama_real_share_client.cpp: LLaVA-1.5-7B's text model and vision encoder,
# GLM-ASR-Nano-2512's and its audio encoder, Qwen3.5-0.8B and its MTP draft; all-zero weights).
# compare.cmake: every compute buffer as stock's with the ggml strategy and no larger with best,
# the peak smaller with the group, and no more than the largest member's need (member_compare).
# Needs mtmd_share_check's mtmd build.
real_share_check() {
    local spec=$1 out=$2 dir=$3 mdir=$3/real kind line
    member_clients "$spec" "$out" "$dir" "$mdir" llama_real_share_client.cpp \
        "real_model.hpp mmproj_model.hpp mtp_model.hpp model_writer.hpp" \
        -- -isystem "$out/mtmd/include" -- "$out/mtmd/libmtmd.a" || return 1
    for kind in vision audio mtp; do
        line=$(member_compare "$mdir" "$mdir/$kind" "llama_real_share.$kind" \
            "at real dimensions, the $kind pair (created, not run)" "$kind" "$mdir/models") || { echo "$line"; return 1; }
        echo "ok: $spec: $line"
    done
}

# inplace_check SPEC OUT: where this ggml exports ggml_op_can_inplace, galloc's answers for
# every op are stock's (whisper.rn 0.7 and llama.rn 0.13 add CLAMP, for one)
inplace_check() {
    local spec=$1 out=$2 dir=$2/inplace
    grep -q 'ggml_op_can_inplace' "$out/include/internal/ggml-impl.h" 2>/dev/null || return 2
    mkdir -p "$dir"
    (
        NPM_SPEC=$spec
        # shellcheck source=../../integrations/ggml/package.sh
        source "$ROOT/integrations/ggml/package.sh"
        package_rename "$ROOT/tests/amalgamation/inplace_ops.c" "$dir/inplace_ops.c"
        for kind in stock galloc; do
            "$CC" -std=c11 -O1 -I "$out/include" -isystem "$out/include/internal" "$dir/inplace_ops.c" \
                "$out/libggml-$kind.a" -lstdc++ -lpthread -lm -ldl "${LINK_FLAGS[@]}" -o "$dir/inplace_ops_$kind" || exit 1
            "${EMULATOR[@]}" "$dir/inplace_ops_$kind" >"$dir/$kind.txt" || exit 1
        done
    ) >"$dir.log" 2>&1 || { tail -n 10 "$dir.log"; return 1; }
    if ! diff "$dir/stock.txt" "$dir/galloc.txt" >"$dir/diff.txt"; then
        echo "$spec: ggml_op_can_inplace differs from stock:"; head -n 10 "$dir/diff.txt"; return 1
    fi
    echo "ok: $spec: ggml_op_can_inplace as stock for all $(wc -l <"$dir/stock.txt") ops ($(grep -c ' 1$' "$dir/stock.txt") in place)"
}

# chunk_check SPEC OUT: where this ggml splits compute buffers into chunks, galloc chooses
# among them as stock does on this ABI (tests/amalgamation/chunk_choice.cpp, compare.cmake)
chunk_check() {
    local spec=$1 out=$2 dir=$2/chunks
    (NPM_SPEC=$spec; source "$ROOT/integrations/ggml/package.sh"; grep -q VBUFFER_MAX_CHUNKS "$SRC/ggml-alloc.c") \
        || return 2
    mkdir -p "$dir"
    (
        NPM_SPEC=$spec
        # shellcheck source=../../integrations/ggml/package.sh
        source "$ROOT/integrations/ggml/package.sh"
        package_rename "$ROOT/tests/amalgamation/chunk_choice.cpp" "$dir/chunk_choice.cpp"
        "$CXX" -std=c++17 -O1 -I "$out/include" -isystem "$out/include/internal" -c "$dir/chunk_choice.cpp" \
            -o "$dir/chunk_choice.o" || exit 1
        for kind in stock galloc; do
            "$CXX" "$dir/chunk_choice.o" "$out/libggml-$kind.a" -lpthread -lm -ldl "${LINK_FLAGS[@]}" \
                -o "$dir/chunk_choice_$kind" || exit 1
        done
    ) >"$dir.log" 2>&1 || { tail -n 10 "$dir.log"; return 1; }
    local emulator
    emulator=$(IFS=';'; echo "${EMULATOR[*]}")
    cmake -DSTOCK="$dir/chunk_choice_stock" -DGALLOC="$dir/chunk_choice_galloc" -DOUT="$dir/run" \
        -DEMULATOR="$emulator" -P "$ROOT/tests/dropin/compare.cmake" >"$dir/compare.log" 2>&1 \
        || { tail -n 30 "$dir/compare.log"; return 1; }
    echo "ok: $spec${ABI:+ ($ABI)}: chunks as stock: $(grep -m1 'exact facts' "$dir/compare.log" | sed 's/^-- //'); 2.25 GiB in chunks $(sed -n 's/^layout large_plan.chunks //p' "$dir/run/stock.txt") (stock), $(sed -n 's/^layout large_plan.chunks //p' "$dir/run/best.txt") (best)"
}

passed=0 failed=0
whisper_dir="" llama_dir=""
mkdir -p "$BUILD_ROOT"
for spec in "$@"; do
    out=$BUILD_ROOT/${spec//@/-}
    # the package's Android flags for ggml-alloc.c (build.sh adds -O2 -DNDEBUG -fPIC before);
    # -ffp-model=fast is clang's name for GCC's -ffast-math
    flags="-std=c++17 -O3 -fvisibility=hidden -fvisibility-inlines-hidden -Werror -Wall -Wextra"
    if [[ $spec != whisper.rn@* ]]; then
        if [[ $CXX == clang* ]]; then flags+=" -ffp-model=fast"; else flags+=" -ffast-math"; fi
        flags+=" -fno-finite-math-only"
    fi
    log=$BUILD_ROOT/build-${spec//@/-}.log
    app=$BUILD_ROOT/apps/${spec//@/-}
    mkdir -p "$BUILD_ROOT/apps"
    if ! patched_app "$spec" "$app"; then
        echo "FAIL: $spec: galloc-rn apply (log: $app.log)"; failed=$((failed + 1))
        continue
    fi
    mapfile -t files < <(find "$app/node_modules/${spec%@*}" -name ggml-alloc.cpp)
    if [[ ${#files[@]} -ne 1 ]]; then
        echo "FAIL: $spec: galloc-rn apply wrote ${#files[@]} ggml-alloc.cpp files"; failed=$((failed + 1))
        continue
    fi
    if GALLOC_DROPIN_SOURCE="${files[0]}" GALLOC_DROPIN_RENAMED=1 GALLOC_DROPIN_CFLAGS="$flags" \
            "$ROOT/integrations/ggml/build.sh" "$spec" "$out" >"$log" 2>&1; then
        echo "ok: $spec${ABI:+ ($ABI)}: $(grep 'smoke test (galloc)' "$log")"
        passed=$((passed + 1))
        # the iOS builds of the newer packages use C++20 (clang, natively: the language does
        # not change with the ABI). The front end is what differs: -fsyntax-only, since
        # compile_matrix_test.sh compiles the file as C++20 at -O3 against these ggml
        # generations already.
        if [[ -n $ABI ]]; then
            :
        elif "$CXX" ${flags/-std=c++17/-std=c++20} -DNDEBUG -I "$out/include" -I "$out/include/internal" \
                -fsyntax-only "${files[0]}" >"$out/cxx20.log" 2>&1; then
            echo "ok: $spec: the patched file also compiles as C++20"; passed=$((passed + 1))
        else
            echo "FAIL: $spec: as C++20"; head -n 20 "$out/cxx20.log"; failed=$((failed + 1))
        fi
    else
        echo "FAIL: $spec${ABI:+ ($ABI)}"; tail -n 20 "$log"; failed=$((failed + 1))
        continue
    fi
    if client "$spec" "$out" "$app"; then
        passed=$((passed + 1))
        prepared=$(NPM_SPEC=$spec; source "$ROOT/integrations/ggml/package.sh"; echo "$PREPARED")
        case $spec in
            # the two-package program runs the newer client: not the 2023 ggml
            whisper.rn@*) [[ -n $whisper_dir ]] || grep -q ggml_allocr_new "$out/include/ggml-alloc.h" ||
                              { whisper_dir=$out; PREPARED_OF_WHISPER=$prepared; } ;;
            llama.rn@*)   [[ -n $llama_dir ]] || { llama_dir=$out; PREPARED_OF_LLAMA=$prepared; } ;;
        esac
    else
        echo "FAIL: $spec: the client"; failed=$((failed + 1))
    fi
    rc=0
    # natively only: the edit is the same C++ on every ABI
    [[ -n $ABI ]] || llama_share_check "$spec" "$out" "$app" || rc=$?
    case $rc in
        0) [[ -n $ABI ]] || passed=$((passed + 1)) ;;
        2) ;;   # galloc-rn does not edit this package's llama-context.cpp (or no llama.cpp)
        *) echo "FAIL: $spec: a llama.rn context's members in one share group"; failed=$((failed + 1)) ;;
    esac
    rc=0
    inplace_check "$spec" "$out" || rc=$?
    case $rc in
        0) passed=$((passed + 1)) ;;
        2) ;;   # this ggml keeps the list to ggml-alloc.c: nothing to compare
        *) echo "FAIL: $spec: ggml_op_can_inplace"; failed=$((failed + 1)) ;;
    esac
    rc=0
    chunk_check "$spec" "$out" || rc=$?
    case $rc in
        0) passed=$((passed + 1)) ;;
        2) ;;   # one buffer per buffer type: no chunks to choose among
        *) echo "FAIL: $spec${ABI:+ ($ABI)}: the chunks"; failed=$((failed + 1)) ;;
    esac
done

# Two renamed copies in one program: whisper.rn's whisper.cpp and llama.rn's llama.cpp, each
# with its own renamed drop-in, run one after the other in one process; each client must
# report what it reported alone on galloc (compare.cmake's best run).
two_clients() {
    local two=$OUT_ROOT/two-packages w=$whisper_dir l=$llama_dir
    rm -rf "$two" && mkdir -p "$two"
    printf '%s\n' 'int whisper_main(int argc, char** argv);' 'int llama_main(int argc, char** argv);' \
        'int main(int argc, char** argv) {' \
        '  if (argc != 3) return 2;' \
        '  char* w[] = {argv[0], argv[1], 0};' \
        '  char* l[] = {argv[0], argv[2], 0};' \
        '  return whisper_main(2, w) != 0 || llama_main(2, l) != 0;' \
        '}' >"$two/main.cpp"
    # the clients' -Wl,--wrap= names, with each package's prefix
    local -a wraps=()
    local w_prefix l_prefix f
    w_prefix=$(sed -n 's/^prefix=//p' "$PREPARED_OF_WHISPER")
    l_prefix=$(sed -n 's/^prefix=//p' "$PREPARED_OF_LLAMA")
    for f in ggml_backend_sched_graph_compute ggml_backend_sched_get_buffer_size \
             ggml_backend_alloc_ctx_tensors ggml_backend_alloc_ctx_tensors_from_buft \
             ggml_backend_buft_alloc_buffer ggml_backend_buffer_free; do
        wraps+=("-Wl,--wrap=${w_prefix:+${w_prefix}_}$f")
    done
    wraps+=("-Wl,--wrap=${l_prefix:+${l_prefix}_}ggml_backend_sched_get_buffer_size")
    {
        clang++ -std=c++17 -O1 -c -I"$w/client" -isystem "$w/whisper/include" -isystem "$w/include" \
            "$w/client/whisper_client.cpp" -Dmain=whisper_main -o "$two/whisper_client.o" &&
        clang++ -std=c++17 -O1 -c -I"$l/client" -isystem "$l/llama/include" -isystem "$l/include" \
            "$l/client/llama_client.cpp" -Dmain=llama_main -o "$two/llama_client.o" &&
        clang++ -std=c++17 -c "$two/main.cpp" -o "$two/main.o" &&
        clang++ "$two/main.o" "$two/whisper_client.o" "$two/llama_client.o" \
            "$w/whisper/libwhisper.a" "$w/libggml-galloc.a" "$l/llama/libllama.a" "$l/libggml-galloc.a" \
            -lpthread -lm -ldl "${wraps[@]}" -o "$two/two-packages"
    } >"$two/build.log" 2>&1 || { tail -n 20 "$two/build.log"; return 1; }
    "$two/two-packages" "$two/tiny-whisper.bin" "$two/tiny-llama.gguf" >"$two/run.txt" 2>"$two/run.err" \
        || { tail -n 20 "$two/run.err"; return 1; }
    # the reports (exact results and sizes) of each client alone, one after the other
    grep -hE '^(exact|size) ' "$w/client/run/best.txt" "$l/client/run/best.txt" >"$two/alone.txt"
    grep -E '^(exact|size) ' "$two/run.txt" >"$two/together.txt"
    if ! diff "$two/alone.txt" "$two/together.txt" >"$two/diff.txt" || [[ ! -s $two/alone.txt ]]; then
        echo "the clients report differently in one program:"; head -n 10 "$two/diff.txt"; return 1
    fi
    echo "ok: $(basename "$w")'s whisper.cpp and $(basename "$l")'s llama.cpp in one program: $(wc -l <"$two/together.txt") reports as alone"
}

if [[ -n $ABI ]]; then
    :   # the two-package program is checked natively
elif [[ -n $whisper_dir && -n $llama_dir ]]; then
    if two_clients; then passed=$((passed + 1)); else echo "FAIL: two packages in one program"; failed=$((failed + 1)); fi
else
    echo "FAIL: the two-package program needs a whisper.rn and a llama.rn spec whose clients run"
    failed=$((failed + 1))
fi
echo "$passed passed, $failed failed"
[[ $failed -eq 0 ]]
