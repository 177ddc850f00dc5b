# Sourced by the react-native tests: packing galloc-rn, the packages' cached tarballs, scratch
# apps, and assertions. The caller sets ROOT (galloc's source dir) and WORK (its scratch dir).

HERE=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
CACHE_ROOT=${GALLOC_CACHE_DIR:-$HOME/.cache/galloc}
TOOL_VERSION=$(node -p "require('$ROOT/integrations/react-native/package.json').version")
failures=0
passes=0

pass() { passes=$((passes + 1)); echo "ok   $*"; }
fail() { failures=$((failures + 1)); echo "FAIL $*"; }
die() { echo "FATAL $*" >&2; exit 1; }
# expect NAME CONDITION...: the command must succeed
expect() { local name=$1; shift; if "$@"; then pass "$name"; else fail "$name"; fi; }
finish() {
  echo "$passes passed, $failures failed"
  [[ $failures -eq 0 ]]
}

treehash() { node "$HERE/treehash.js" "$@"; }

# The galloc-rn tarball, packed from the source tree (npm pack runs prepack, which writes the
# one file); prints its path.
pack_tool() {
  local dest=$WORK/pack
  mkdir -p "$dest"
  (cd "$ROOT/integrations/react-native" && npm pack --pack-destination "$dest" --loglevel=error >"$dest/pack.log" 2>&1) ||
    { cat "$dest/pack.log" >&2; die "npm pack of integrations/react-native failed"; }
  local tgz=("$dest"/galloc-rn-*.tgz)
  [[ -f ${tgz[0]} ]] || die "npm pack wrote no tarball"
  echo "${tgz[0]}"
}

# The package's tarball as npm serves it (cached; fetched once like package.sh does); prints its path.
package_tarball() {  # package_tarball NAME VERSION
  local key="$1-$2"
  local dir=$CACHE_ROOT/ggml-src/$key tgz=$CACHE_ROOT/ggml-src/$key/$key.tgz
  if [[ ! -f $tgz ]]; then
    mkdir -p "$dir"
    local dl
    dl=$(mktemp -d "$dir/.download.XXXXXX")
    (cd "$dl" && npm pack "$1@$2" --ignore-scripts --loglevel=error >/dev/null 2>&1) ||
      { rm -rf "$dl"; die "npm pack $1@$2 failed (no cached $tgz)"; }
    mv "$dl"/*.tgz "$tgz"
    rm -rf "$dl"
  fi
  echo "$tgz"
}

# Extracts a package's tarball as node_modules/NAME of an app.
install_package() {  # install_package APP NAME VERSION
  local tgz
  tgz=$(package_tarball "$2" "$3") || exit 1
  mkdir -p "$1/node_modules/$2"
  tar xzf "$tgz" -C "$1/node_modules/$2" --strip-components=1 --no-same-owner
}

GRADLE_TEXT=$'org.gradle.jvmargs=-Xmx2048m\nandroid.useAndroidX=true\n'
# A scratch app: package.json (as npm writes it) and android/gradle.properties.
make_app() {  # make_app DIR
  rm -rf "$1"
  mkdir -p "$1/android"
  printf '{\n  "name": "scratch-app",\n  "version": "1.0.0",\n  "private": true\n}\n' >"$1/package.json"
  printf '%s' "$GRADLE_TEXT" >"$1/android/gradle.properties"
}

sha() { sha256sum "$1" | cut -c1-64; }
