#!/usr/bin/env bash
# Build a stock ggml (core + CPU backend) from the ggml sources vendored in an
# npm package (llama.rn / whisper.rn), with the package's symbol prefix
# (lm_ggml_ / wsp_ggml_ ...) renamed back to upstream names.
#
# usage: build.sh NPM_SPEC OUT_DIR        e.g. build.sh llama.rn@0.12.9 out/ggml
#
# GALLOC_GGML_AS_SHIPPED=1 keeps the package's prefix instead, as an app builds it: the
# sources stay as the tarball has them, the -D flags and the drop-in get the package's own
# renaming (see package_rename), and so does the smoke test.
#
# Another ABI (tests/amalgamation/packages_test.sh --abi): CC and CXX name a cross compiler,
# GALLOC_GGML_CPU_ARCH the CPU backend's arch sources (x86, the default; arm; or generic, which
# defines GGML_CPU_GENERIC as the packages' Android builds do for 32-bit x86),
# GALLOC_GGML_EXTRA_CFLAGS its -march flags, GALLOC_GGML_LDFLAGS the smoke tests' link flags
# (-static) and GALLOC_GGML_RUN the command that runs them (qemu-aarch64).
#
# Produces OUT_DIR/libggml-stock.a, OUT_DIR/include/ and OUT_DIR/include/internal/,
# and OUT_DIR/libggml-galloc.a: the same library with ggml-alloc.c replaced by galloc's
# drop-in (the one file amalgamate.sh writes from the files next to this one, or
# GALLOC_DROPIN_SOURCE) and galloc itself compiled in. See README.md next to this file.
set -euo pipefail

SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[0]}")
SCRIPT_DIR=$(dirname "$SCRIPT_PATH")

die()  { echo "ggml-build: error: $*" >&2; exit 1; }
step() { echo "ggml-build: $*"; }

[[ $# -eq 2 ]] || die "usage: $0 NPM_SPEC OUT_DIR   (e.g. llama.rn@0.12.9 out/ggml)"
NPM_SPEC=$1
mkdir -p "$2"
OUT_DIR=$(readlink -f "$2")

# ---------------------------------------------------------------- settings
CC=${CC:-$(command -v gcc-12 || command -v gcc || echo cc)}
CXX=${CXX:-$(command -v g++-12 || command -v g++ || echo c++)}
JOBS=${GALLOC_JOBS:-2}
CPU_ARCH=${GALLOC_GGML_CPU_ARCH:-x86}
case $CPU_ARCH in x86|arm|generic) ;; *) die "GALLOC_GGML_CPU_ARCH is '$CPU_ARCH'; use x86, arm or generic" ;; esac
# shellcheck disable=SC2206
RUN_PREFIX=(${GALLOC_GGML_RUN-})
# shellcheck disable=SC2206
LINK_FLAGS=(${GALLOC_GGML_LDFLAGS-})
# The drop-in variant is built by default from galloc's one file, written into OUT_DIR;
# GALLOC_DROPIN_SOURCE=FILE builds another self-contained file, and GALLOC_DROPIN_SOURCE=""
# (set but empty) builds the stock library only.
if [[ -z ${GALLOC_DROPIN_SOURCE+x} ]]; then
    "$SCRIPT_DIR/amalgamate.sh" --with-dump "$OUT_DIR/ggml-alloc.one.cpp" >/dev/null
    GALLOC_DROPIN_SOURCE=$OUT_DIR/ggml-alloc.one.cpp
fi
# shellcheck source=package.sh
source "$SCRIPT_DIR/package.sh"

have_flock() { command -v flock >/dev/null 2>&1; }

# ---------------------------------------------------------------- 1+2: fetch, extract, rename
# Backends other than the CPU one are dropped; so is everything that is not ggml.
is_other_backend() {
    case $1 in
        ggml-blas*|ggml-metal*|ggml-opencl*|ggml-hexagon*|ggml-cuda*|ggml-hip*|ggml-musa*|\
        ggml-vulkan*|ggml-sycl*|ggml-kompute*|ggml-cann*|ggml-rpc*|ggml-webgpu*|ggml-zdnn*|\
        ggml-zendnn*|ggml-openvino*|ggml-virtgpu*|ggml-et*|ggml-amx*) return 0 ;;
    esac
    return 1
}

prepare_sources() {
    mkdir -p "$PKG_CACHE"
    if have_flock; then exec 8>"$PKG_CACHE/.lock"; flock 8; fi
    [[ -f $PREPARED ]] && return 0

    fetch_tarball
    step "extracting ggml sources from $(basename "$TARBALL")"
    local tmp cpp stage
    tmp=$(mktemp -d "$PKG_CACHE/.extract.XXXXXX")
    tar -xzf "$TARBALL" -C "$tmp" package/cpp || { rm -rf "$tmp"; die "cannot extract package/cpp"; }
    cpp=$tmp/package/cpp
    stage=$tmp/src
    mkdir -p "$stage"
    # Where ggml is: package/cpp/ (renamed, flat), or, from llama.rn 0.13 on, llama.cpp's own
    # tree unrenamed under package/vendor/llama.cpp/ggml/ (headers in include/, sources in src/).
    local -a dirs=("$cpp")
    local vendor=package/vendor/llama.cpp
    if [[ ! -f $cpp/ggml.h ]] && tar -xzf "$TARBALL" -C "$tmp" "$vendor/ggml" "$vendor/LICENSE" 2>/dev/null; then
        dirs=("$tmp/$vendor/ggml/include" "$tmp/$vendor/ggml/src")
        cp -p "$tmp/$vendor/LICENSE" "$stage/LICENSE"
    fi
    [[ -f ${dirs[0]}/ggml.h ]] || { rm -rf "$tmp"; die "$NPM_SPEC: no ggml.h in package/cpp/ or $vendor/ggml/include/"; }

    # symbol prefix used by the package: lm (llama.rn), wsp (whisper.rn), ...
    local P=${GALLOC_GGML_PREFIX-}
    if [[ -z ${GALLOC_GGML_PREFIX+x} ]]; then
        P=$(detect_prefix "${dirs[0]}/ggml.h")
    fi

    shopt -s nullglob
    local f b d
    for d in "${dirs[@]}"; do
        for f in "$d"/ggml*.c "$d"/ggml*.cpp "$d"/ggml*.h "$d"/gguf*.cpp "$d"/gguf*.h \
                 "$d"/*_ggml*.c "$d"/*_ggml*.cpp "$d"/*_ggml*.h; do
            b=${f##*/}
            [[ -n $P ]] && b=${b//${P}_ggml/ggml}
            is_other_backend "$b" && continue
            cp -p "$f" "$stage/$b"
        done
        [[ -d $d/ggml-cpu ]] && cpp=$d   # the CPU backend's folder is looked for below
    done
    [[ -f $cpp/LICENSE ]] && cp -p "$cpp/LICENSE" "$stage/LICENSE"
    # the flat layout of the CPU backend (cui-llama.rn 1.6.0): its parts beside ggml-cpu.c
    for f in unary-ops binary-ops ops vec; do
        for b in "$cpp/$f.h" "$cpp/$f.cpp"; do [[ -f $b ]] && cp -p "$b" "$stage/"; done
    done
    for b in simd-mappings.h cpu-common.h; do [[ -f $cpp/$b ]] && cp -p "$cpp/$b" "$stage/"; done
    if [[ -d $cpp/ggml-cpu ]]; then       # current layout: CPU backend in its own folder
        (cd "$cpp" && find ggml-cpu -type f \( -name '*.c' -o -name '*.cpp' -o -name '*.h' \) \
            -exec cp -p --parents {} "$stage/" \;)
    fi
    shopt -u nullglob
    [[ -f $stage/ggml.c && -f $stage/ggml-alloc.c && -f $stage/ggml.h ]] \
        || { rm -rf "$tmp"; die "$NPM_SPEC: no ggml sources found in package/cpp"; }

    if [[ -n $P && $AS_SHIPPED != 1 ]]; then
        local U=${P^^}
        # Order matters. whisper.rn's rename also hit the word "quantize" everywhere:
        # dequantize_row_q4_0 -> wsp_dewsp_quantize_row_q4_0 and
        # ggml_quantize_init -> wsp_ggml_wsp_quantize_init. The last two rules drop
        # the prefix wherever it starts a word or follows '_' (lm_iq2xs_init_impl,
        # wsp_quantize_row_*, ggml_wsp_quantize_*), but not inside a word.
        find "$stage" -type f ! -name LICENSE -print0 | xargs -0 sed -i -E \
            -e "s/${P}_de${P}_/de/g" -e "s/${U}_DE${U}_/DE/g" \
            -e "s/${P}_ggml/ggml/g"  -e "s/${U}_GGML/GGML/g" \
            -e "s/${P}_gguf/gguf/g"  -e "s/${U}_GGUF/GGUF/g" \
            -e "s/(^|[^A-Za-z0-9])${P}_/\\1/g" -e "s/(^|[^A-Za-z0-9])${U}_/\\1/g"
        local left
        left=$(grep -rliE "${P}_ggml|${P}_gguf|(^|[^A-Za-z0-9])${P}_" "$stage" | grep -v '/LICENSE$' || true)
        [[ -z $left ]] || { rm -rf "$tmp"; die "prefix '$P' still present after renaming in: $left"; }
    fi

    rm -rf "$SRC"
    mv "$stage" "$SRC"
    rm -rf "$tmp"
    printf 'spec=%s\nprefix=%s\n' "$NPM_SPEC" "$P" >"$PREPARED"
}

# ---------------------------------------------------------------- 3: build
# -D flags name ggml's macros, which the package prefixed too: set once the sources are
# prepared (the prefix is read from them).
COMMON_FLAGS=()
set_common_flags() {
    local m
    m=$(shipped_prefix)
    m=${m:+${m^^}_}
    COMMON_FLAGS=(
        -O2 -DNDEBUG -fPIC -pthread
        -D_XOPEN_SOURCE=600 -D_GNU_SOURCE     # what ggml's CMake adds on Linux
        "-D${m}GGML_USE_CPU"                  # ggml-backend-reg.cpp registers the CPU backend
        "-D${m}GGML_USE_CPU_REPACK"           # upstream default (current CPU backend)
        "-D${m}GGML_USE_CPU_AARCH64"          # upstream default (its late-2024 name)
        "-D${m}GGML_SCHED_MAX_COPIES=4"
        "-D${m}GGML_VERSION=\"$PKG_KEY\"" "-D${m}GGML_COMMIT=\"npm:$PKG_KEY\""
    )
    if [[ $CPU_ARCH == generic ]]; then COMMON_FLAGS+=("-D${m}GGML_CPU_GENERIC"); fi
}
# shellcheck disable=SC2206
EXTRA_FLAGS=(${GALLOC_GGML_EXTRA_CFLAGS-})   # e.g. -march=native; empty = baseline x86-64

INCLUDE_FLAGS=()
set_include_flags() {
    INCLUDE_FLAGS=(-I"$SRC")
    [[ -d $SRC/ggml-cpu ]] && INCLUDE_FLAGS+=(-I"$SRC/ggml-cpu")
    return 0
}

# Sources of the stock library, relative to $SRC: core (ggml-base) + CPU backend.
STOCK_SOURCES=()
collect_sources() {
    STOCK_SOURCES=()
    local f
    shopt -s nullglob
    for f in "$SRC"/ggml*.c "$SRC"/ggml*.cpp "$SRC"/gguf*.cpp; do
        case ${f##*/} in ggml-opt.cpp) continue ;; esac   # training API, not needed
        STOCK_SOURCES+=("${f#"$SRC"/}")
    done
    for f in "$SRC"/unary-ops.cpp "$SRC"/binary-ops.cpp "$SRC"/ops.cpp "$SRC"/vec.cpp; do
        [[ -f $f ]] && STOCK_SOURCES+=("${f#"$SRC"/}")   # the flat CPU backend (cui-llama.rn 1.6.0)
    done
    if [[ -d $SRC/ggml-cpu ]]; then
        for f in "$SRC"/ggml-cpu/*.c "$SRC"/ggml-cpu/*.cpp; do STOCK_SOURCES+=("${f#"$SRC"/}"); done
        if [[ $CPU_ARCH != generic ]]; then
            for f in "$SRC/ggml-cpu/arch/$CPU_ARCH/quants.c" "$SRC/ggml-cpu/arch/$CPU_ARCH/repack.cpp"; do
                [[ -f $f ]] && STOCK_SOURCES+=("${f#"$SRC"/}")
            done
        fi
    fi
    shopt -u nullglob
}

# ggml-cpu/ggml-cpu.c -> ggml-cpu_ggml-cpu.c.o (ggml-cpu.c and ggml-cpu.cpp both exist)
obj_name() {
    local r=$1
    if [[ $r == "$SRC"/* ]]; then r=${r#"$SRC"/}; r=${r//\//_}; else r=${r##*/}; fi
    echo "$r.o"
}

# compile_one SRC OBJ KIND   (runs in an xargs child; reads the GB_* variables,
# which are flag lists meant to be word-split)
# shellcheck disable=SC2206
compile_one() {
    local src=$1 obj=$2 kind=$3
    local -a cmd
    case $kind in
        c)      cmd=("$GB_CC"  $GB_CFLAGS) ;;
        cxx)    cmd=("$GB_CXX" $GB_CXXFLAGS) ;;
        dropin) cmd=("$GB_CXX" $GB_DROPINFLAGS) ;;
    esac
    rm -f "$obj"
    if "${cmd[@]}" -MMD -MF "$obj.d" -c "$src" -o "$obj.tmp" >"$obj.log" 2>&1; then
        mv "$obj.tmp" "$obj"
    else
        rm -f "$obj.tmp"; return 1
    fi
}
export -f compile_one

# compile_sources OBJDIR LOG KIND:SRC...  -> compiles in parallel, appends output to LOG
compile_sources() {
    local objdir=$1 log=$2; shift 2
    mkdir -p "$objdir"
    local -a recs=() objs=() srcs=()
    local item kind src obj
    for item in "$@"; do
        kind=${item%%:*}; src=${item#*:}
        obj=$objdir/$(obj_name "$src")
        recs+=("$src" "$obj" "$kind"); objs+=("$obj"); srcs+=("$src")
    done
    local rc=0
    printf '%s\0' "${recs[@]}" | xargs -0 -n3 -P "$JOBS" bash -c 'compile_one "$@"' _ || rc=$?
    local i failed=()
    for i in "${!objs[@]}"; do
        { echo "### ${srcs[$i]}"; cat "${objs[$i]}.log" 2>/dev/null || true; } >>"$log"
        [[ -f ${objs[$i]} ]] || failed+=("$i")
    done
    if [[ $rc -ne 0 || ${#failed[@]} -gt 0 ]]; then
        for i in "${failed[@]}"; do
            echo "---- ${srcs[$i]} (tail of ${objs[$i]}.log) ----" >&2
            tail -n 30 "${objs[$i]}.log" >&2 || true
        done
        die "compilation failed; full log: $log"
    fi
}

# build_archive LIB OBJDIR LOG KIND:SRC... [-- PREBUILT_OBJ...]
#   compiles the listed sources into OBJDIR and archives them with the prebuilt objects.
build_archive() {
    local lib=$1 objdir=$2 log=$3; shift 3
    local -a items=() pre=()
    while [[ $# -gt 0 && $1 != -- ]]; do items+=("$1"); shift; done
    [[ $# -gt 0 ]] && { shift; pre=("$@"); }
    [[ ${#items[@]} -gt 0 ]] && compile_sources "$objdir" "$log" "${items[@]}"
    local -a objs=() item
    for item in "${items[@]}"; do objs+=("$objdir/$(obj_name "${item#*:}")"); done
    rm -f "$lib.tmp"
    ar rcs "$lib.tmp" "${objs[@]}" "${pre[@]}" >>"$log" 2>&1 || die "ar failed; see $log"
    mv "$lib.tmp" "$lib"
}

kind_of() { case $1 in *.c) echo c ;; *) echo cxx ;; esac; }

config_string() {
    printf '%s\n' "script=$SCRIPT_PATH" "spec=$NPM_SPEC" "src=$SRC" \
        "cc=$CC $("$CC" -dumpfullversion 2>/dev/null || true)" \
        "cxx=$CXX $("$CXX" -dumpfullversion 2>/dev/null || true)" \
        "flags=${COMMON_FLAGS[*]} ${EXTRA_FLAGS[*]}" "sources=${STOCK_SOURCES[*]}" "link=${LINK_FLAGS[*]}"
}

stock_is_fresh() {
    local lib=$OUT_DIR/libggml-stock.a stamp=$OUT_DIR/.libggml-stock.stamp
    [[ -f $lib && -f $stamp && -f $OUT_DIR/include/ggml.h && -f $OUT_DIR/include/internal/ggml-impl.h ]] || return 1
    [[ $(cat "$stamp") == "$(config_string)" ]] || return 1
    [[ $lib -nt $SCRIPT_PATH ]] || return 1
    [[ -z $(find "$SRC" -newer "$lib" -print -quit) ]] || return 1
}

install_headers() {
    rm -rf "$OUT_DIR/include"
    mkdir -p "$OUT_DIR/include/internal"
    local h
    for h in ggml.h ggml-alloc.h ggml-backend.h ggml-cpu.h ggml-cpp.h gguf.h; do
        [[ -f $SRC/$h ]] && cp "$SRC/$h" "$OUT_DIR/include/"
    done
    # internal headers: enough for ggml-impl.h (struct ggml_cgraph, hash sets) and
    # ggml-backend-impl.h (custom buffer types); they include the public ones above.
    for h in ggml-impl.h ggml-backend-impl.h ggml-common.h ggml-quants.h ggml-threading.h; do
        [[ -f $SRC/$h ]] && cp "$SRC/$h" "$OUT_DIR/include/internal/"
    done
    [[ -f $SRC/LICENSE ]] && cp "$SRC/LICENSE" "$OUT_DIR/include/LICENSE.ggml"
    return 0
}

build_stock() {
    local log=$OUT_DIR/build-stock.log objdir=$OUT_DIR/obj-stock
    # never leave a stale library behind a failed build
    rm -rf "$objdir" "$log" "$OUT_DIR/libggml-stock.a" "$OUT_DIR/.libggml-stock.stamp"
    step "compiling ${#STOCK_SOURCES[@]} ggml sources ($NPM_SPEC, -j$JOBS; log: $log)"
    local -a items=() s
    for s in "${STOCK_SOURCES[@]}"; do items+=("$(kind_of "$s"):$SRC/$s"); done
    build_archive "$OUT_DIR/libggml-stock.a" "$objdir" "$log" "${items[@]}"
    install_headers
    # symbols the stock ggml-alloc.c defines: what a drop-in replacement must provide
    nm -g --defined-only "$objdir/ggml-alloc.c.o" | awk '$2 ~ /^[TDBR]$/ {print $3}' | sort \
        >"$OUT_DIR/ggml-alloc.exports.txt"
    config_string >"$OUT_DIR/.libggml-stock.stamp"
    step "built $OUT_DIR/libggml-stock.a"
}

# ---------------------------------------------------------------- 4: drop-in variant
# The drop-in file compiled into libggml-galloc.a with the stock objects, so that the archive
# alone (with -lstdc++ -lpthread -lm -ldl) links a program.

# obj_is_fresh OBJ: the object exists and no file it was built from (gcc -MMD) is newer
obj_is_fresh() {
    local obj=$1 f
    [[ -f $obj && -f $obj.d ]] || return 1
    local -a deps
    read -r -d '' -a deps < <(sed -e 's/^[^:]*://' -e 's/\\$//' "$obj.d") || true
    for f in "${deps[@]}"; do
        [[ -e $f && ! $f -nt $obj ]] || return 1
    done
}

build_galloc() {
    local dropin lib=$OUT_DIR/libggml-galloc.a stamp=$OUT_DIR/.libggml-galloc.stamp
    local objdir=$OUT_DIR/obj-galloc log=$OUT_DIR/build-galloc.log
    dropin=$(readlink -f "$GALLOC_DROPIN_SOURCE") || die "GALLOC_DROPIN_SOURCE not found"
    [[ -f $dropin ]] || die "GALLOC_DROPIN_SOURCE '$GALLOC_DROPIN_SOURCE' is not a file"
    # the app's copy: renamed as the package renames ggml-alloc.c, unless GALLOC_DROPIN_RENAMED=1
    # says the file is renamed already (the one galloc-rn apply wrote into the package)
    if [[ $AS_SHIPPED == 1 && ${GALLOC_DROPIN_RENAMED-} != 1 ]]; then
        local renamed=$OUT_DIR/ggml-alloc.renamed.cpp
        package_rename "$dropin" "$renamed.tmp"
        if cmp -s "$renamed.tmp" "$renamed"; then rm -f "$renamed.tmp"; else mv "$renamed.tmp" "$renamed"; fi
        dropin=$renamed
    fi
    local cfg
    cfg=$(printf '%s\n' "$(config_string)" "dropin=$dropin" "dropin_flags=$GB_DROPINFLAGS")
    # objects built with another configuration (flags, compilers, file) are thrown away
    if [[ ! -f $objdir/.config || $(cat "$objdir/.config") != "$cfg" ]]; then
        rm -rf "$objdir" "$lib" "$stamp"
        mkdir -p "$objdir"
        printf '%s\n' "$cfg" >"$objdir/.config"
    fi
    # the archive also holds the stock objects
    [[ -f $stamp && $(cat "$stamp") == "$cfg" && $lib -nt $OUT_DIR/libggml-stock.a ]] || rm -f "$lib" "$stamp"
    # compiled again only when it or a header changed (the object tracks them with gcc -MMD)
    local -a stale=() objs=() s obj
    obj=$objdir/$(obj_name "$dropin")
    objs+=("$obj"); obj_is_fresh "$obj" || stale+=("dropin:$dropin")
    if [[ ${#stale[@]} -eq 0 && -f $lib ]]; then
        step "$(basename "$lib") is up to date"
    else
        rm -f "$lib" "$stamp" "$log"
        if [[ ${#stale[@]} -gt 0 ]]; then
            step "compiling the drop-in (log: $log)"
            compile_sources "$objdir" "$log" "${stale[@]}"
        fi
        local -a prebuilt=()
        for s in "${STOCK_SOURCES[@]}"; do
            [[ $s == ggml-alloc.c ]] && continue
            prebuilt+=("$OUT_DIR/obj-stock/$(obj_name "$SRC/$s")")
        done
        rm -f "$lib.tmp"
        ar rcs "$lib.tmp" "${objs[@]}" "${prebuilt[@]}" >>"$log" 2>&1 || die "ar failed; see $log"
        mv "$lib.tmp" "$lib"
        # report stock ggml-alloc symbols the drop-in does not define (warning only)
        local missing
        missing=$(comm -23 "$OUT_DIR/ggml-alloc.exports.txt" \
            <(nm -g --defined-only "${objs[@]}" 2>/dev/null | awk 'NF==3 {print $3}' | sort -u) | tr '\n' ' ')
        [[ -z $missing ]] || step "warning: drop-in object does not define (ok only if GALLOC_DROPIN_LIBS does): $missing"
        printf '%s\n' "$cfg" >"$stamp"
        step "built $lib"
    fi
    printf '%s\n' "${GALLOC_DROPIN_LIBS-}" >"$OUT_DIR/libggml-galloc.ldflags"
}

# ---------------------------------------------------------------- 5: self-check
# run_smoke LIB NAME [EXTRA_LINK_ARGS...]   (LIB and the extras are linked as a group,
# so a drop-in library may call back into ggml)
run_smoke() {
    local lib=$1 name=$2; shift 2
    local exe=$OUT_DIR/smoke_test-$name log=$OUT_DIR/smoke_test-$name.log source=smoke_test.c
    # the 2023 ggml (ggml_allocr_*, no ggml-cpu.h) has a smoke test of its own API
    grep -q ggml_allocr_new "$SRC/ggml-alloc.h" && source=smoke_test_2023.c
    package_rename "$SCRIPT_DIR/$source" "$OUT_DIR/smoke_test.c"
    # EXTRA_FLAGS too: a sanitizer's runtime must be linked as the library was compiled
    if ! "$CC" -std=c11 -O1 -Wall -Wextra "${EXTRA_FLAGS[@]}" "$OUT_DIR/smoke_test.c" -I "$OUT_DIR/include" \
            "${LINK_FLAGS[@]}" -o "$exe" -Wl,--start-group "$lib" "$@" -Wl,--end-group -lstdc++ -lpthread -lm -ldl \
            >"$log" 2>&1; then
        tail -n 30 "$log" >&2; die "smoke test ($name) failed to compile/link; log: $log"
    fi
    if ! "${RUN_PREFIX[@]}" "$exe" >>"$log" 2>&1; then
        tail -n 30 "$log" >&2; die "smoke test ($name) failed; log: $log"
    fi
    step "smoke test ($name) passed: $(tail -n 1 "$log")"
}

# ---------------------------------------------------------------- main
prepare_sources
set_common_flags
if have_flock; then exec 8>&-; exec 9>"$OUT_DIR/.build.lock"; flock 9; fi
set_include_flags
collect_sources
export GB_CC=$CC GB_CXX=$CXX
export GB_CFLAGS="${COMMON_FLAGS[*]} ${INCLUDE_FLAGS[*]} -std=gnu11 ${EXTRA_FLAGS[*]}"
export GB_CXXFLAGS="${COMMON_FLAGS[*]} ${INCLUDE_FLAGS[*]} -std=gnu++17 ${EXTRA_FLAGS[*]}"
# The drop-in sees ggml's sources (it detects ggml's API generation from the headers itself).
export GB_DROPINFLAGS="${COMMON_FLAGS[*]} ${INCLUDE_FLAGS[*]} -std=gnu++20 ${EXTRA_FLAGS[*]} ${GALLOC_DROPIN_CFLAGS-}"

if stock_is_fresh; then
    step "libggml-stock.a is up to date ($NPM_SPEC)"
else
    build_stock
fi
run_smoke "$OUT_DIR/libggml-stock.a" stock

if [[ -n ${GALLOC_DROPIN_SOURCE-} ]]; then
    build_galloc
    # shellcheck disable=SC2086
    run_smoke "$OUT_DIR/libggml-galloc.a" galloc ${GALLOC_DROPIN_LIBS-}
fi
