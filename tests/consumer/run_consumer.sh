#!/usr/bin/env bash
# Builds tests/consumer/project against galloc: MODE=install (find_package from an install
# prefix) or MODE=subdirectory (add_subdirectory of the source tree), then runs it.
set -euo pipefail
mode=$1 source_dir=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
quiet() { "$@" >"$work/log.txt" 2>&1 || { tail -n 40 "$work/log.txt"; exit 1; }; }
if [ "$mode" = install ]; then
  quiet cmake -S "$source_dir" -B "$work/galloc-build" -DGALLOC_BUILD_TESTS=OFF -DGALLOC_BUILD_TOOLS=OFF \
    -DCMAKE_INSTALL_PREFIX="$work/prefix"
  quiet cmake --build "$work/galloc-build" -j2
  quiet cmake --install "$work/galloc-build"
  quiet cmake -S "$source_dir/tests/consumer/project" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix"
else
  quiet cmake -S "$source_dir/tests/consumer/project" -B "$work/consumer" -DGALLOC_SOURCE_DIR="$source_dir"
fi
quiet cmake --build "$work/consumer" -j2
"$work/consumer/consumer"
