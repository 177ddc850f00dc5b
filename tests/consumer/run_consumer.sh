#!/usr/bin/env bash
# Builds tests/consumer/project against galloc: MODE=install (find_package from an install
# prefix, installed from the build the other tests use, GALLOC_BUILD_DIR) or MODE=subdirectory
# (add_subdirectory of the source tree), then runs it.
# usage: run_consumer.sh install|subdirectory GALLOC_SOURCE_DIR WORK_DIR [GALLOC_BUILD_DIR]
set -euo pipefail
mode=$1 source_dir=$2 work=$3 build_dir=${4-}
rm -rf "$work" && mkdir -p "$work"
quiet() { "$@" >"$work/log.txt" 2>&1 || { tail -n 40 "$work/log.txt"; exit 1; }; }
if [ "$mode" = install ]; then
  quiet cmake --install "$build_dir" --prefix "$work/prefix"
  quiet cmake -S "$source_dir/tests/consumer/project" -B "$work/consumer" -DCMAKE_PREFIX_PATH="$work/prefix"
else
  quiet cmake -S "$source_dir/tests/consumer/project" -B "$work/consumer" -DGALLOC_SOURCE_DIR="$source_dir"
fi
quiet cmake --build "$work/consumer" -j2
"$work/consumer/consumer"
