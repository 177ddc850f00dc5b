#!/usr/bin/env bash
# galloc-rn on bad input: each failure exits non-zero, names the problem, and leaves the
# package as it was. An unsupported version; foreign changes to ggml-alloc.c, the CMake line
# and whisper.cpp; a read-only file; a write that fails after others were made; revert with
# nothing applied; no package at all; usage.
# usage: bad_input_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
ROOT=$(readlink -f "$1") WORK=$2
source "$(dirname "$0")/common.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

tgz=$(pack_tool) || exit 1
mkdir -p "$WORK/tool" && tar xzf "$tgz" -C "$WORK/tool" --strip-components=1
G=(node "$WORK/tool/bin/galloc-rn.js")

# The template: whisper.rn 0.4.0-rc.10 (small, and whisper.cpp is edited there).
TEMPLATE=$WORK/template
make_app "$TEMPLATE"
install_package "$TEMPLATE" whisper.rn 0.4.0-rc.10
W=node_modules/whisper.rn
fresh() { rm -rf "$WORK/app" && cp -a "$TEMPLATE" "$WORK/app" && echo "$WORK/app"; }
run() { "${G[@]}" "$@" >"$WORK/out" 2>&1; echo $? >"$WORK/rc"; cat "$WORK/out" >>"$WORK/all"; }
rc() { cat "$WORK/rc"; }
says() { grep -qF -- "$1" "$WORK/out"; }

# 1. An unsupported version: refused, named with the supported ones; whisper.rn untouched,
#    llama.rn (supported) still handled; exit non-zero.
app=$(fresh)
install_package "$app" llama.rn 0.12.9
node -e "const f='$app/$W/package.json', fs=require('fs'); const j=JSON.parse(fs.readFileSync(f)); j.version='0.7.3'; fs.writeFileSync(f, JSON.stringify(j, null, 2) + '\n')"
before=$(treehash "$app/$W")
run apply --app "$app"
expect "unsupported: apply exits non-zero" test "$(rc)" -ne 0
expect "unsupported: the message names the version" says 'whisper.rn@0.7.3 is not supported'
expect "unsupported: the message names the supported ones" says '0.4.0-rc.8, 0.4.0-rc.10, 0.7.4'
expect "unsupported: whisper.rn unchanged" test "$(treehash "$app/$W")" = "$before"
expect "unsupported: no patch for it" test ! -e "$app/patches/whisper.rn+0.7.3.patch"
expect "unsupported: llama.rn in the same app still handled" test -f "$app/node_modules/llama.rn/cpp/ggml-alloc.cpp"
run check --app "$app"
expect "unsupported: check fails" test "$(rc)" -ne 0
expect "unsupported: check names the version" says 'whisper.rn@0.7.3 is not supported'

# 2-4. Foreign changes: the package is left exactly as it was, the message names the file.
foreign() {  # foreign LABEL FILE SED_EXPRESSION
  local app label=$1 file=$2
  app=$(fresh)
  sed -i "$3" "$app/$W/$file"
  local before
  before=$(treehash "$app/$W")
  run apply --app "$app"
  expect "$label: apply exits non-zero" test "$(rc)" -ne 0
  expect "$label: the message names $W/$file" says "$W/$file has been changed"
  expect "$label: whisper.rn unchanged" test "$(treehash "$app/$W")" = "$before"
  expect "$label: no patch for whisper.rn" test ! -e "$app/patches/whisper.rn+0.4.0-rc.10.patch"
}
foreign "foreign ggml-alloc.c" cpp/ggml-alloc.c '1i // mine'
foreign "foreign CMake line" android/src/main/CMakeLists.txt 's|ggml-alloc\.c$|ggml-alloc.c  # mine|'
foreign "foreign whisper.cpp" cpp/whisper.cpp 's/^struct whisper_state \* whisper_init_state(/struct whisper_state * whisper_init_state (/'

# A foreign change after apply: revert refuses too, and changes nothing of that package.
app=$(fresh)
run apply --app "$app"
sed -i 's|ggml-alloc\.cpp$|ggml-alloc.cpp # mine|' "$app/$W/android/src/main/CMakeLists.txt"
before=$(treehash "$app/$W" "$app/patches/whisper.rn+0.4.0-rc.10.patch")
run revert --app "$app"
expect "foreign change after apply: revert exits non-zero" test "$(rc)" -ne 0
expect "foreign change after apply: revert names the file" says "$W/android/src/main/CMakeLists.txt has been changed"
expect "foreign change after apply: whisper.rn and its patch unchanged by revert" \
  test "$(treehash "$app/$W" "$app/patches/whisper.rn+0.4.0-rc.10.patch")" = "$before"

# 5. A read-only file. root writes through chmod 444, so the tool runs as nobody there, on an
#    app nobody owns (in /tmp, which nobody can reach).
app=$(fresh)
ro=$(mktemp -d /tmp/galloc-rn-readonly.XXXXXX)
trap 'rm -rf "$ro"' EXIT
cp -a "$app" "$ro/app" && cp -a "$WORK/tool" "$ro/tool"
chmod 444 "$ro/app/$W/android/src/main/CMakeLists.txt"
if [[ $(id -u) -eq 0 ]]; then
  chmod 755 "$ro"
  chown -R 65534:65534 "$ro"
  as_user=(setpriv --reuid=65534 --regid=65534 --clear-groups)
else
  as_user=()
fi
before=$(treehash "$ro/app")
"${as_user[@]}" env HOME="$ro" node "$ro/tool/bin/galloc-rn.js" apply --app "$ro/app" >"$WORK/out" 2>&1; echo $? >"$WORK/rc"
cat "$WORK/out" >>"$WORK/all"
expect "read-only: apply exits non-zero" test "$(rc)" -ne 0
expect "read-only: the message names the file" says "$W/android/src/main/CMakeLists.txt is read-only"
expect "read-only: the app unchanged" test "$(treehash "$ro/app")" = "$before"
rm -rf "$ro"

# 5b. A write that fails after the package's own files were written: a file named patches in
#     the app's root, where the patch goes last. What was written is put back.
app=$(fresh)
echo "not a folder" >"$app/patches"
before=$(treehash "$app/$W")
run apply --app "$app"
expect "failed partway: apply exits non-zero" test "$(rc)" -ne 0
expect "failed partway: the message names the file" says "cannot write patches/whisper.rn+0.4.0-rc.10.patch"
expect "failed partway: whisper.rn put back as it was" test "$(treehash "$app/$W")" = "$before"

# 6. revert with nothing applied: a no-op that says so.
app=$(fresh)
before=$(treehash "$app")
run revert --app "$app"
expect "nothing applied: revert exits 0" test "$(rc)" -eq 0
expect "nothing applied: revert says so" says 'Nothing to revert'
expect "nothing applied: revert changes nothing" test "$(treehash "$app")" = "$before"

# 7. No supported package at all.
make_app "$WORK/empty"
run apply --app "$WORK/empty"
expect "no package: apply exits non-zero" test "$(rc)" -ne 0
expect "no package: says which packages it looked for" says 'found none of whisper.rn, llama.rn, cui-llama.rn'
run check --app "$WORK/empty"
expect "no package: check exits non-zero" test "$(rc)" -ne 0

# 8. Usage.
run frobnicate
expect "unknown command: exits non-zero" test "$(rc)" -ne 0
expect "unknown command: prints usage" says 'usage: galloc-rn'
run apply --frobnicate
expect "unknown option: exits non-zero" test "$(rc)" -ne 0
expect "unknown option: prints usage" says 'usage: galloc-rn'
run
expect "no command: exits non-zero" test "$(rc)" -ne 0
run --help
expect "--help prints usage" says 'usage: galloc-rn'
# The messages are for people: no stack traces anywhere above.
expect "no stack trace in any message" bash -c "! grep -Eq '^ +at |Error: ' '$WORK/all'"
[[ $failures -eq 0 ]] && rm -rf "$WORK/app" "$WORK/template"
finish
