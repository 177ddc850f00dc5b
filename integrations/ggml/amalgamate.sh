#!/usr/bin/env bash
# Writes galloc's ggml drop-in as ONE self-contained C++ file: galloc's core planner (the
# sources of the galloc_core target that the drop-in calls) followed by the drop-in's files:
# what its API generations share, then one file per generation, each under the compile-time
# probe (api_generations.hpp) that keeps it for the ggml it is built into. The
# file includes only ggml's own headers and the C++ standard library, builds as C++17 or
# C++20, and gives every galloc symbol internal linkage, so that two copies renamed by two
# packages (lm_ggml_, wsp_ggml_) link into one program without clashing.
#
# usage: amalgamate.sh [--with-dump] OUT_FILE
#   --with-dump  also galloc's graph file code, so that GALLOC_DUMP=DIR writes every reserved
#                graph as a galloc graph file; the file then also includes nlohmann/json.hpp
set -euo pipefail

SCRIPT_DIR=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
ROOT=$(readlink -f "$SCRIPT_DIR/../..")

die() { echo "amalgamate: error: $*" >&2; exit 1; }
WITH_DUMP=0
if [[ ${1-} == --with-dump ]]; then WITH_DUMP=1; shift; fi
[[ $# -eq 1 && $1 != -* ]] || die "usage: $0 [--with-dump] OUT_FILE"
OUT=$1

# Headers in dependency order: each comes after everything it includes.
HEADERS=(
    include/galloc/status.hpp
    include/galloc/types.hpp
    include/galloc/graph.hpp
    src/tensor_sources.hpp
    include/galloc/buffer.hpp
    include/galloc/problem.hpp
    include/galloc/lifetimes.hpp
    include/galloc/extents.hpp
    include/galloc/dynamic_allocator.hpp
    src/dynamic_allocator_index.hpp
    src/wide_product.hpp
    include/galloc/placement.hpp
    src/placement_internal.hpp
    include/galloc/validator.hpp
    include/galloc/plan.hpp
    include/galloc/planner.hpp
    include/galloc/shared_arena.hpp
    src/shared_arena_state.hpp
    include/galloc/graph_allocator.hpp
    src/graph_allocator_state.hpp
    include/galloc/linear_allocator.hpp
)
# galloc_core's sources, as CMakeLists.txt lists them, but the C API: its extern "C" names
# would clash between two copies, and the drop-in does not call it.
mapfile -t SOURCES < <(sed -n '/^set(GALLOC_CORE_SOURCES/,/)/p' "$ROOT/CMakeLists.txt" \
    | grep -oE 'src/[A-Za-z0-9_/]+\.cpp' | grep -v '^src/c_api\.cpp$')
[[ ${#SOURCES[@]} -gt 0 ]] || die "no GALLOC_CORE_SOURCES in $ROOT/CMakeLists.txt"
if [[ $WITH_DUMP == 1 ]]; then
    HEADERS+=(include/galloc/graph_json.hpp)
    SOURCES+=(src/graph_json.cpp)
fi
# The drop-in: its own headers in dependency order, their definitions (before the files that
# call them), what the generations share, then each generation (ggml-alloc.h from late 2024
# on, and the 2023 one).
DROPIN=(
    integrations/ggml/api_generations.hpp
    integrations/ggml/cgraph_conversion.hpp
    integrations/ggml/dropin_env.hpp
    integrations/ggml/galloc-ggml.h
    integrations/ggml/ggml-alloc-shared.hpp
    integrations/ggml/cgraph_conversion.cpp
    integrations/ggml/dropin_env.cpp
    integrations/ggml/ggml-alloc-shared.cpp
    integrations/ggml/ggml-alloc-2024.cpp
    integrations/ggml/ggml-alloc-2023.cpp
)

for f in "${HEADERS[@]}" "${SOURCES[@]}" "${DROPIN[@]}" LICENSE; do
    [[ -f $ROOT/$f ]] || die "missing $f under $ROOT"
done
# Every local include must be one of HEADERS or DROPIN (or ggml's own): anything else would
# be dropped silently.
for f in "${HEADERS[@]}" "${SOURCES[@]}" "${DROPIN[@]}"; do
    while IFS= read -r inc; do
        # ggml's own; the graph file, which the drop-in includes only with GALLOC_DROPIN_JSON
        # (--with-dump)
        case $inc in ggml*.h) continue ;; galloc/graph_json.hpp) [[ $WITH_DUMP == 0 ]] && continue ;; esac
        found=0
        for h in "${HEADERS[@]}" "${DROPIN[@]}"; do
            [[ $h == "include/$inc" || $h == */"$inc" ]] && found=1
        done
        [[ $found -eq 1 ]] || die "$f includes \"$inc\", which is not part of the amalgamation"
    done < <(sed -n 's/^#include "\([^"]*\)".*/\1/p' "$ROOT/$f")
done

# strip FILE: the file without #pragma once and its local includes. System includes go to
# $SYSTEM_INCLUDES, a conditional one with the #if line around it (one level, no #else).
SYSTEM_INCLUDES=$(mktemp)
BODY=$(mktemp)
trap 'rm -f "$SYSTEM_INCLUDES" "$BODY"' EXIT

strip() {
    awk -v file="$1" -v sys="$SYSTEM_INCLUDES" '
        /^[ \t]*#[ \t]*if/            { depth++; condition = $0 }
        /^[ \t]*#[ \t]*(else|elif)/   { branched[depth] = 1 }
        /^[ \t]*#[ \t]*endif/         { delete branched[depth]; depth-- }
        /^#pragma once/ || /^#include "/ { next }
        /^#include </ {
            if (depth > 1 || branched[depth]) {
                print "amalgamate: error: " file ": a system include under nested #if or #else" > "/dev/stderr"
                exit 3
            }
            if (depth == 1) print condition "\n" $0 "\n#endif" >> sys
            else print $0 >> sys
            next
        }
        { print }
    ' "$ROOT/$1"
}

commit=$(git -C "$ROOT" rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
dirty=""
if [[ $commit != unknown ]] && ! git -C "$ROOT" diff --quiet HEAD -- include src integrations/ggml 2>/dev/null; then
    dirty=" (with uncommitted changes)"
fi

{
    echo "// ---- galloc core: $(printf '%s ' "${HEADERS[@]}" "${SOURCES[@]}" | fold -w 90 -s | sed '2,$s|^|//      |')"
    echo "namespace {"
    for f in "${HEADERS[@]}" "${SOURCES[@]}"; do
        printf '\n// ==== %s\n' "$f"
        strip "$f"
    done
    echo "}  // namespace"
    for f in "${DROPIN[@]}"; do
        printf '\n// ==== %s\n' "$f"
        strip "$f"
    done
} >"$BODY"

tmp="$OUT.tmp.$$"
{
    cat <<EOF
// ggml-alloc.cpp: galloc's drop-in for ggml's ggml-alloc.c, as one file.
// Generated by integrations/ggml/amalgamate.sh from galloc commit $commit$dirty; do not edit.
//
// Use: put this file in place of ggml-alloc.c in a ggml tree (a React Native package's cpp/
// folder, say: run the package's own symbol renaming over it first, as over ggml-alloc.c)
// and compile it as C++17 or later. It includes only ggml's headers and the standard
// library, detects the ggml API generation from those headers at compile time, and gives
// every galloc symbol internal linkage. See docs/apps.md in galloc's repository.
//
// Environment: GALLOC_STRATEGY=NAME, a placement strategy by name, as "galloc strategies"
// lists them (default best; ggml reproduces stock ggml-alloc's offsets and buffer sizes).
//
// galloc is licensed under the MIT license:
//
$(sed 's|^|//   |; s|[[:space:]]*$||' "$ROOT/LICENSE")
//
// It follows ggml's ggml-alloc.c (MIT, Copyright (c) 2023-2024 The ggml authors) in its
// behaviour, not its code. The placement strategies follow published work (Pisarchyk & Lee
// 2020; Moffitt, MiniMalloc, 2023); no code of those projects is included.

#define GALLOC_NO_TARGET_CLONES 1
#define GALLOC_REVISION "$commit$dirty"
$([[ $WITH_DUMP == 1 ]] && echo '#define GALLOC_DROPIN_JSON 1  // --with-dump: GALLOC_DUMP=DIR works')

EOF
    # then the standard library: unconditional includes once each, conditional ones as written
    awk '/^#if/ { getline; getline; next } { print }' "$SYSTEM_INCLUDES" | LC_ALL=C sort -u
    # conditional ones (three lines: #if, #include, #endif), each once
    awk '/^#if/ { a = $0; getline b; getline c; k = a "\n" b "\n" c; if (!(k in seen)) { seen[k] = 1; print k } }' "$SYSTEM_INCLUDES"
    echo
    echo "// The core defines functions that the drop-in does not call, and ggml-impl.h defines"
    echo "// static helpers that it does not call either; each unused one would be a warning."
    echo "#if defined(__clang__)"
    echo "#pragma clang diagnostic push"
    echo "#pragma clang diagnostic ignored \"-Wunused-function\""
    echo "#pragma clang diagnostic ignored \"-Wunused-member-function\""
    echo "#pragma clang diagnostic ignored \"-Wunused-template\""
    echo "#pragma clang diagnostic ignored \"-Wunneeded-internal-declaration\""
    echo "#elif defined(__GNUC__)"
    echo "#pragma GCC diagnostic push"
    echo "#pragma GCC diagnostic ignored \"-Wunused-function\""
    echo "#endif"
    echo
    # ggml's headers, as the drop-in includes them
    for f in "${DROPIN[@]}"; do grep -hE '^#include "ggml[^"]*\.h"' "$ROOT/$f" || true; done | awk '!seen[$0]++'
    echo
    cat "$BODY"
    echo
    echo "#if defined(__clang__)"
    echo "#pragma clang diagnostic pop"
    echo "#elif defined(__GNUC__)"
    echo "#pragma GCC diagnostic pop"
    echo "#endif"
} >"$tmp"
# an unchanged file keeps its time stamp, so that builds using it do not compile it again
if cmp -s "$tmp" "$OUT"; then
    rm -f "$tmp"
    echo "amalgamate: $OUT is up to date (galloc $commit$dirty)"
else
    mv "$tmp" "$OUT"
    echo "amalgamate: wrote $OUT ($(wc -l <"$OUT") lines, galloc $commit$dirty)"
fi
