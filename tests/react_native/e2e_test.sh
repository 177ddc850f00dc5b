#!/usr/bin/env bash
# galloc-rn end to end, from the tarballs the npm registry serves: for every supported
# version, an app installs the package, galloc-rn's tarball and patch-package 8.0.0; apply
# and check pass; after node_modules is deleted and installed again, `npx patch-package`
# alone brings back the same tree, byte for byte, and check passes; and each package's tree is
# the one tests/amalgamation/packages_test.sh builds and runs (the cached tarball, unpacked,
# with galloc-rn applied). Needs the npm registry, as make test does anyway.
# usage: e2e_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
ROOT=$(readlink -f "$1") WORK=$2
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/versions.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

npm view patch-package@8.0.0 version >/dev/null 2>&1 || die "the npm registry cannot be reached"
tgz=$(pack_tool) || exit 1
NPM_INSTALL=(npm install --ignore-scripts --no-audit --no-fund --prefer-offline --legacy-peer-deps --loglevel=error)

# One app per group of packages that can live together; the apps run at once.
e2e_app() {  # e2e_app INDEX SPECS...
  local i=$1; shift
  local app=$WORK/app$i names=() spec
  for spec in "$@"; do names+=("node_modules/${spec%@*}"); done
  make_app "$app"
  cd "$app" || return 1
  step() { echo "-- app$i: $*"; }
  step "npm install $* galloc-rn patch-package@8.0.0"
  "${NPM_INSTALL[@]}" "$@" "$tgz" patch-package@8.0.0 || { echo "FAIL app$i: npm install"; return 1; }
  step "npx galloc-rn apply"
  npx --no-install galloc-rn apply || { echo "FAIL app$i: apply exited $?"; return 1; }
  step "npx galloc-rn check"
  npx --no-install galloc-rn check || { echo "FAIL app$i: check after apply"; return 1; }
  local h1 h2
  h1=$(treehash "${names[@]}")
  for spec in "$@"; do
    [[ -s patches/${spec%@*}+${spec#*@}.patch ]] || { echo "FAIL app$i: no patch for $spec"; return 1; }
  done
  step "rm -rf node_modules; npm install (no scripts, so no postinstall)"
  rm -rf node_modules
  "${NPM_INSTALL[@]}" || { echo "FAIL app$i: npm install again"; return 1; }
  if npx --no-install galloc-rn check >/dev/null; then
    echo "FAIL app$i: check passes on a fresh install before patch-package"; return 1
  fi
  step "npx patch-package"
  npx --no-install patch-package || { echo "FAIL app$i: patch-package exited $?"; return 1; }
  step "npx galloc-rn check"
  npx --no-install galloc-rn check || { echo "FAIL app$i: check after patch-package"; return 1; }
  h2=$(treehash "${names[@]}")
  [[ $h1 == "$h2" ]] || { echo "FAIL app$i: patch-package's tree differs from apply's"; return 1; }
  # what packages_test.sh builds: the tarball from the cache, unpacked alone in an app, applied
  local ref name
  for spec in "$@"; do
    name=${spec%@*} ref=$WORK/reference$i-${spec//@/-}
    make_app "$ref"
    install_package "$ref" "$name" "${spec#*@}" || { echo "FAIL app$i: no cached tarball of $spec"; return 1; }
    npx --no-install galloc-rn apply --app "$ref" >"$ref.log" 2>&1 || { echo "FAIL app$i: apply on $spec's cached tarball"; return 1; }
    [[ $(cd "$ref" && treehash "node_modules/$name") == $(treehash "node_modules/$name") ]] ||
      { echo "FAIL app$i: $spec from the registry, patched, differs from the tree the package tests build"; return 1; }
    rm -rf "$ref"
  done
  echo "ok   app$i ($*): apply, check, reinstall, patch-package: the same tree, check passes, as the package tests build it"
}

pids=()
i=0
for group in "${APP_GROUPS[@]}"; do
  i=$((i + 1))
  (e2e_app "$i" $group) >"$WORK/app$i.log" 2>&1 &
  pids+=($!)
done
i=0
for pid in "${pids[@]}"; do
  i=$((i + 1))
  if wait "$pid"; then pass "app$i: ${APP_GROUPS[$((i - 1))]}"; else fail "app$i: ${APP_GROUPS[$((i - 1))]}"; fi
  sed 's/^/    /' "$WORK/app$i.log"
done
[[ $failures -eq 0 ]] && rm -rf "$WORK"/app*/node_modules  # hundreds of MB; kept when a check failed
finish
