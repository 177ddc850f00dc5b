# Sourced by build-llama.sh and build-whisper.sh: what building a ggml client library (libllama,
# libwhisper) from an npm package takes besides the client's own file list.
#
#   source client.sh CLIENT NPM_SPEC OUT_DIR      CLIENT: llama or whisper
#
# Defines NPM_SPEC, OUT_DIR, CXX, JOBS, CLIENT_SRC (the client's prepared sources, in the
# package's cache beside ggml's), LIB_DIR, LIB and STAMP, plus everything package.sh defines.
#
# GALLOC_CLIENT_GGML_SPEC=OTHER_SPEC builds the client against the ggml that build.sh
# prepared in OUT_DIR for another package: whisper.cpp and llama.cpp on one ggml in one
# program, as whisper.cpp's talk-llama example links them. The client's sources still come
# from NPM_SPEC, which build.sh need not have prepared (its prefix is read from its ggml.h).

die()  { echo "$CLIENT-build: error: $*" >&2; exit 1; }
step() { echo "$CLIENT-build: $*"; }

client_setup() {
    [[ $# -eq 2 ]] || die "usage: $(basename "$SCRIPT_PATH") NPM_SPEC OUT_DIR   (run build.sh NPM_SPEC OUT_DIR first)"
    NPM_SPEC=$1
    OUT_DIR=$(readlink -f "$2")
    CXX=${CXX:-$(command -v g++-12 || command -v g++ || echo c++)}
    JOBS=${GALLOC_JOBS:-2}
    GGML_SPEC=${GALLOC_CLIENT_GGML_SPEC:-$NPM_SPEC}
    # shellcheck source=package.sh
    source "$(dirname "$SCRIPT_PATH")/package.sh"
    CLIENT_SRC=$PKG_CACHE/$CLIENT-src$SOURCES_SUFFIX
    LIB_DIR=$OUT_DIR/$CLIENT
    LIB=$LIB_DIR/lib$CLIENT.a
    STAMP=$LIB_DIR/.lib$CLIENT.stamp
    if [[ $GGML_SPEC != "$NPM_SPEC" ]]; then
        # ggml's prepared sources (SRC) are the other package's
        SRC=$(NPM_SPEC=$GGML_SPEC; source "$(dirname "$SCRIPT_PATH")/package.sh"; echo "$SRC")
        [[ -f $OUT_DIR/libggml-stock.a ]] || die "run integrations/ggml/build.sh $GGML_SPEC $OUT_DIR first"
    else
        [[ -f $PREPARED && -f $OUT_DIR/libggml-stock.a ]] \
            || die "run integrations/ggml/build.sh $NPM_SPEC $OUT_DIR first"
    fi
    grep -qx "spec=$GGML_SPEC" "$OUT_DIR/.libggml-stock.stamp" 2>/dev/null \
        || die "$OUT_DIR holds ggml for another package (see $OUT_DIR/.libggml-stock.stamp)"
    # A client built on another package's ggml may come first to this package's cache.
    mkdir -p "$PKG_CACHE"
    exec 9>"$PKG_CACHE/.$CLIENT.lock"
    if command -v flock >/dev/null 2>&1; then flock 9; fi
}

# client_extract: the package's cpp/ folder in a fresh CLIENT_TMP/package/cpp.
client_extract() {
    fetch_tarball
    step "extracting $CLIENT.cpp's sources from $(basename "$TARBALL")"
    CLIENT_TMP=$(mktemp -d "$PKG_CACHE/.extract-$CLIENT.XXXXXX")
    tar -xzf "$TARBALL" -C "$CLIENT_TMP" package/cpp || { rm -rf "$CLIENT_TMP"; die "cannot extract package/cpp"; }
}

# client_install STAGE STAMP_TEXT LEFT_PATTERN: removes the prefix build.sh removed from ggml
# (unless the build keeps the package's names), then makes STAGE the prepared sources. Only
# ggml's and gguf's names are renamed; LEFT_PATTERN, an extended regex in which PREFIX and
# UPPER stand for the prefix in lower and upper case, finds what must not be left.
client_install() {
    local stage=$1 stamp_text=$2 left_pattern=$3 P left
    if [[ -f $PREPARED ]]; then
        P=$(sed -n 's/^prefix=//p' "$PREPARED")
    else  # GALLOC_CLIENT_GGML_SPEC: build.sh never prepared this package
        P=$(detect_prefix "$CLIENT_TMP/package/cpp/ggml.h")
    fi
    if [[ -n $P && $AS_SHIPPED != 1 ]]; then
        local U=${P^^}
        find "$stage" -type f -print0 | xargs -0 sed -i -E \
            -e "s/${P}_ggml/ggml/g" -e "s/${U}_GGML/GGML/g" -e "s/${P}_gguf/gguf/g" -e "s/${U}_GGUF/GGUF/g"
        left_pattern=${left_pattern//PREFIX/$P}
        left=$(grep -rlE "${left_pattern//UPPER/$U}" "$stage" || true)
        [[ -z $left ]] || { rm -rf "$CLIENT_TMP"; die "prefix '$P' still present in: $left"; }
    fi
    rm -rf "$CLIENT_SRC"
    mv "$stage" "$CLIENT_SRC"
    rm -rf "$CLIENT_TMP"
    echo "$stamp_text" >"$CLIENT_SRC/.prepared"
}

# client_flags: the compile flags for the client's sources, given its include folders.
client_flags() {
    FLAGS=(-std=gnu++17 -O1 -g0 -w -fPIC -pthread -DNDEBUG -D_GNU_SOURCE -D_XOPEN_SOURCE=600)
    local dir
    for dir in "$@" "$SRC"; do FLAGS+=(-I"$dir"); done
    [[ -d $SRC/ggml-cpu ]] && FLAGS+=(-I"$SRC/ggml-cpu")
    return 0
}

# client_is_fresh SOURCES_TEXT NEWER_INPUT...: whether LIB was built by this script with these
# flags and sources, and is newer than the script and every NEWER_INPUT.
client_is_fresh() {
    CLIENT_CONFIG=$(printf '%s\n' "script=$SCRIPT_PATH" "spec=$NPM_SPEC" \
        "cxx=$CXX $("$CXX" --version 2>/dev/null | head -n1)" "flags=${FLAGS[*]}" "sources=$1")
    shift
    [[ -f $LIB && -f $STAMP && $(cat "$STAMP") == "$CLIENT_CONFIG" && $LIB -nt $SCRIPT_PATH ]] || return 1
    local f
    for f in "${BASH_SOURCE[0]}" "$@"; do [[ ! $f -nt $LIB ]] || return 1; done
}

# client_build HEADER... -- SOURCE... [-- GROUPED_SOURCE...]: compiles the sources (JOBS at a
# time) into LIB and copies the headers to LIB_DIR/include. GROUPED_SOURCEs are compiled a
# group per translation unit (one file including several): llama.cpp's files and its ~140
# graph builders each parse the same large headers, which is most of their compile time. A
# group that does not compile as one (two files define the same static function, say) is
# compiled file by file instead.
client_build() {
    local -a headers=() sources=() grouped=()
    while [[ $# -gt 0 && $1 != -- ]]; do headers+=("$1"); shift; done
    shift
    while [[ $# -gt 0 && $1 != -- ]]; do sources+=("$1"); shift; done
    [[ $# -gt 0 ]] && shift
    grouped=("$@")
    rm -rf "$LIB_DIR"
    mkdir -p "$LIB_DIR/obj" "$LIB_DIR/include" "$LIB_DIR/groups"
    local log=$LIB_DIR/build.log rc=0 groups=$((JOBS * 2)) i
    [[ ${#grouped[@]} -lt $groups ]] && groups=${#grouped[@]}
    for ((i = 0; i < ${#grouped[@]}; i++)); do
        [[ -f ${grouped[i]} ]] || die "no source file '${grouped[i]}'"
        printf '#include "%s"\n' "${grouped[i]}" >>"$LIB_DIR/groups/group-$((i % groups)).cpp"
    done
    local what="$((${#sources[@]} + ${#grouped[@]})) files"
    [[ $groups -gt 0 ]] && what+=", ${#grouped[@]} of them in $groups groups"
    step "compiling $what ($NPM_SPEC, -j$JOBS; log: $log)"
    for ((i = 0; i < groups; i++)); do sources+=("$LIB_DIR/groups/group-$i.cpp"); done
    export CB_CXX=$CXX CB_FLAGS="${FLAGS[*]}" CB_OBJ=$LIB_DIR/obj CB_GROUPS=$LIB_DIR/groups
    # shellcheck disable=SC2016
    printf '%s\0' "${sources[@]}" | xargs -0 -n1 -P "$JOBS" bash -c '
        compile() {
            local obj=$CB_OBJ/$(echo "${1#/}" | tr / _).o
            $CB_CXX $CB_FLAGS -c "$1" -o "$obj" >"$obj.log" 2>&1 && return 0
            [[ $2 == group ]] && { rm -f "$obj"; return 1; }
            echo "---- $1"; tail -n 20 "$obj.log"; return 1
        }
        compile "$1" "$([[ $1 == "$CB_GROUPS"/* ]] && echo group)" && exit 0
        [[ $1 == "$CB_GROUPS"/* ]] || exit 1
        echo "$(basename "$1") does not compile as one translation unit: its files one by one"
        sed -n "s/^#include \"\(.*\)\"$/\1/p" "$1" | while IFS= read -r src; do compile "$src" || exit 1; done' _ \
        >"$log" 2>&1 || rc=$?
    if [[ $rc -ne 0 ]]; then
        tail -n 40 "$log" >&2
        die "compilation failed; full log: $log"
    fi
    ar rcs "$LIB.tmp" "$LIB_DIR"/obj/*.o
    mv "$LIB.tmp" "$LIB"
    cp "${headers[@]}" "$LIB_DIR/include/"
    printf '%s\n' "$CLIENT_CONFIG" >"$STAMP"
    step "built $LIB"
}

CLIENT=$1
shift
SCRIPT_PATH=$(readlink -f "${BASH_SOURCE[1]}")
client_setup "$@"
