#!/bin/sh
# Checks galloc's include graph against its layers (layers.txt beside this script): every
# header of include/galloc/ and every header and source of src/ is in a layer, and each
# includes only files of its own layer and of the layers below it.
#
# usage: check_layers.sh [SOURCE_DIR [LAYERS_FILE]]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
cd "${1:-$here/../..}"
layers=${2:-$here/layers.txt}
files=$(find include/galloc src -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' \) | LC_ALL=C sort)
# shellcheck disable=SC2086  # the paths have no spaces
exec awk -f "$here/check_layers.awk" "$layers" $files
