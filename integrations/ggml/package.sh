# Sourced by build.sh, build-llama.sh and build-whisper.sh: where an npm package's sources are
# cached, fetching its tarball, and the package's own symbol renaming. The caller defines
# die() and step() and sets NPM_SPEC first.
#
#   GALLOC_CACHE_DIR        cache root (default ~/.cache/galloc)
#   GALLOC_GGML_AS_SHIPPED  1: the sources keep the package's prefix (lm_ggml_, wsp_ggml_), as
#                           an app builds them; otherwise the prefix is renamed back to ggml_

# NPM_SPEC must be name@exact-version (the version is the cache key).
spec_body=${NPM_SPEC#@}
[[ $spec_body == *@* ]] || die "NPM_SPEC must be name@version, got '$NPM_SPEC'"
PKG_NAME=${NPM_SPEC%@*}
PKG_VERSION=${NPM_SPEC##*@}
[[ -n $PKG_NAME && -n $PKG_VERSION ]] || die "bad NPM_SPEC '$NPM_SPEC'"
PKG_KEY=$(echo "${PKG_NAME#@}-$PKG_VERSION" | tr '/' '-')

CACHE_ROOT=${GALLOC_CACHE_DIR:-$HOME/.cache/galloc}
PKG_CACHE=$CACHE_ROOT/ggml-src/$PKG_KEY
TARBALL=$PKG_CACHE/$PKG_KEY.tgz
AS_SHIPPED=${GALLOC_GGML_AS_SHIPPED:-0}
# Cached source folders (src, llama-src, whisper-src) get this suffix as shipped.
if [[ $AS_SHIPPED == 1 ]]; then SOURCES_SUFFIX=-as-shipped; else SOURCES_SUFFIX=""; fi
SRC=$PKG_CACHE/src$SOURCES_SUFFIX               # ggml's sources (layout as in package/cpp)
PREPARED=$PKG_CACHE/.prepared$SOURCES_SUFFIX    # spec= and prefix= of the prepared sources

# The tarball, from the npm registry once (npm pack, no install scripts).
fetch_tarball() {
    [[ -f $TARBALL ]] && return 0
    mkdir -p "$PKG_CACHE"
    step "fetching $NPM_SPEC from the npm registry"
    local dl tgz
    dl=$(mktemp -d "$PKG_CACHE/.download.XXXXXX")
    if ! (cd "$dl" && npm pack "$NPM_SPEC" --ignore-scripts --loglevel=error >"$dl/npm.log" 2>&1); then
        tail -n 20 "$dl/npm.log" >&2; rm -rf "$dl"; die "npm pack $NPM_SPEC failed"
    fi
    tgz=("$dl"/*.tgz)
    [[ -f ${tgz[0]} ]] || { rm -rf "$dl"; die "npm pack produced no tarball"; }
    mv "${tgz[0]}" "$TARBALL"
    rm -rf "$dl"
}

# The prefix the prepared ggml sources carry: the package's as shipped, none when renamed.
shipped_prefix() {
    [[ $AS_SHIPPED == 1 && -f $PREPARED ]] && sed -n 's/^prefix=//p' "$PREPARED"
    return 0
}

# The prefix a package's ggml.h gives its names (lm, wsp), or nothing.
detect_prefix() {
    grep -oE '\b[A-Za-z0-9]+_ggml_init\b' "$1" | head -n1 | sed 's/_ggml_init$//' || true
}

# package_rename IN OUT: the package's own renaming, as its bootstrap script applies it to
# ggml's files: GGML_/ggml_/GGUF_/gguf_ prefixed anywhere (no word boundaries, so inside
# longer names and strings too); whisper.rn also prefixes dequantize_ and quantize_, which is
# seen in its sources as the double prefix wsp_dewsp_quantize_. A copy when not as shipped.
# PACKAGE_PREFIX, when set, names the prefix (for a tree build.sh has not prepared), and
# PACKAGE_CPP the package's cpp/ folder.
package_rename() {
    local in=$1 out=$2 p u
    p=${PACKAGE_PREFIX-$(shipped_prefix)}
    u=${p^^}
    if [[ -z $p ]]; then cp "$in" "$out"; return 0; fi
    local -a rules=(-e "s/GGML_/${u}_GGML_/g" -e "s/ggml_/${p}_ggml_/g"
                    -e "s/GGUF_/${u}_GGUF_/g" -e "s/gguf_/${p}_gguf_/g")
    if grep -qs "${p}_de${p}_quantize_" "${PACKAGE_CPP:-$SRC}/ggml-quants.h"; then
        rules+=(-e "s/dequantize_/${p}_dequantize_/g" -e "s/quantize_/${p}_quantize_/g")
    fi
    sed "${rules[@]}" "$in" >"$out"
}
