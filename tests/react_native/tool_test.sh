#!/usr/bin/env bash
# galloc-rn on scratch apps built from the packages' npm tarballs (all supported versions):
# apply, check, every edit present and nothing else changed, apply again changes no byte,
# --no-share, revert restores the tree byte for byte, check fails after.
# usage: tool_test.sh SOURCE_DIR WORK_DIR
set -uo pipefail
ROOT=$(readlink -f "$1") WORK=$2
source "$(dirname "$0")/common.sh"
source "$(dirname "$0")/versions.sh"
rm -rf "$WORK" && mkdir -p "$WORK"

tgz=$(pack_tool) || exit 1
mkdir -p "$WORK/tool" && tar xzf "$tgz" -C "$WORK/tool" --strip-components=1
G=(node "$WORK/tool/bin/galloc-rn.js")
ONE=$WORK/tool/dist/ggml-alloc.cpp
[[ -s $ONE ]] && pass "the tarball carries dist/ggml-alloc.cpp" || die "no dist/ggml-alloc.cpp in $tgz"

# The file apply must write for NAME@VERSION, made here with sed as docs/apps.md says.
expected_cpp() {  # expected_cpp NAME VERSION PREFIX SHARE_DEFAULT
  local p=$3 P=${3^^}
  printf '// galloc-rn %s wrote this file for %s@%s in place of ggml-alloc.c; `npx galloc-rn revert` undoes it.\n' \
    "$TOOL_VERSION" "$1" "$2"
  printf '#define GALLOC_SHARE_DEFAULT "%s"\n' "$4"
  if [[ $p == - ]]; then cat "$ONE"
  elif [[ $p == wsp ]]; then
    sed -e "s/GGML_/${P}_GGML_/g" -e "s/ggml_/${p}_ggml_/g" -e "s/GGUF_/${P}_GGUF_/g" -e "s/gguf_/${p}_gguf_/g" \
        -e "s/dequantize_/${p}_dequantize_/g" -e "s/quantize_/${p}_quantize_/g" "$ONE"
  else
    sed -e "s/GGML_/${P}_GGML_/g" -e "s/ggml_/${p}_ggml_/g" -e "s/GGUF_/${P}_GGUF_/g" -e "s/gguf_/${p}_gguf_/g" "$ONE"
  fi
}

# Every edit of one package is there, and nothing else in it changed.
check_edits() {  # check_edits APP PRISTINE_DIR NAME VERSION SHARE(yes/no)
  local app=$1 pristine=$2 name=$3 version=$4 share=$5 row dir prefix vshare lines
  row=$(version_row "$name" "$version")
  read -r _ _ dir prefix vshare lines <<<"$row"
  local pkg=$app/node_modules/$name what="$name@$version"
  local def
  [[ $share == yes ]] && def=groups || def=0
  expect "$what: ggml-alloc.c removed" test ! -e "$pkg/$dir/ggml-alloc.c"
  expect "$what: ggml-alloc.cpp is the renamed one file with the two lines in front" \
    cmp -s <(expected_cpp "$name" "$version" "$prefix" "$def") "$pkg/$dir/ggml-alloc.cpp"
  local f expect_changed=("$dir/ggml-alloc.c" "$dir/ggml-alloc.cpp")
  for f in ${lines//,/ }; do
    expect "$what: $f lists ggml-alloc.cpp instead, one line changed" \
      cmp -s <(sed 's/ggml-alloc\.c$/ggml-alloc.cpp/' "$pristine/$f") "$pkg/$f"
    expect "$what: $f changed at all" bash -c "! cmp -s '$pristine/$f' '$pkg/$f'"
    expect_changed+=("$f")
  done
  local w fn=galloc_${prefix}_ggml_share
  [[ $prefix == - ]] && fn=galloc_ggml_share
  for w in ${vshare//,/ }; do
    [[ $w == no ]] && continue
    if [[ $w == *llama-context.cpp && $share == yes ]]; then
      expect "$what: the constructor notes the thread's share group" \
        bash -c "grep -A1 -F 'LLAMA_LOG_INFO(\"%s: constructing llama_context\\n\", __func__);' '$pkg/$w' |
                 grep -Fxq '    galloc_rn_join(this); // galloc-rn'"
      expect "$what: the destructor forgets it" \
        grep -Pzq 'llama_context::~llama_context\(\) \{\n    galloc_rn_leave\(this\); // galloc-rn\n' "$pkg/$w"
      expect "$what: sched_reserve opens the group again" \
        grep -Pzq '    sched_need_reserve = false;\n    const galloc_rn_reopen galloc_rn_group\(this\); // galloc-rn\n' "$pkg/$w"
      expect "$what: graph reuse only while the last alloc is in place" \
        grep -Eq 'res->can_reuse\(gparams\) && galloc_rn_in_place\(this\)\) \{$' "$pkg/$w"
      expect "$what: the generation noted after each alloc" \
        grep -Eq '_backend_sched_alloc_graph\(sched.get\(\), gf\) \|\| !galloc_rn_allocated\(this\)\) \{$' "$pkg/$w"
      expect "$what: the helpers call the renamed ${fn}_group and _generation" \
        bash -c "grep -q '${fn}_group()' '$pkg/$w' && grep -q '${fn}_generation(' '$pkg/$w'"
      expect "$what: the renamed one file defines ${fn}_group/_generation" \
        bash -c "grep -Eq '^const char\* ${fn}_group\(void\) \{' '$pkg/$dir/ggml-alloc.cpp' &&
                 grep -Eq '^unsigned long long ${fn}_generation\(const char\* name\) \{' '$pkg/$dir/ggml-alloc.cpp'"
      expect "$what: llama-context.cpp is the pristine one plus the helpers, three lines and two conditions" \
        cmp -s <(sed -e '/^\/\/ galloc-rn: a llama_context made in a share group stays in it\./,/^\/\/ galloc-rn: end of the share group helpers\.$/{/^\/\/ galloc-rn: end/N;d}' \
                     -e '/ \/\/ galloc-rn$/d' -e 's/ && galloc_rn_in_place(this)) {$/) {/' \
                     -e 's/ || !galloc_rn_allocated(this)) {$/) {/' "$pkg/$w") \
               "$pristine/$w"
      # (tests/amalgamation/packages_test.sh compiles, links and runs it)
      expect_changed+=("$w")
    elif [[ $w == *rn-llama.cpp && $share == yes ]]; then
      expect "$what: loadModel makes the target's context in the llama.rn context's group" \
        grep -Fxq '    llama_init = galloc_rn_in_context_group(this, [&] { return common_init_from_params(params); });' "$pkg/$w"
      expect "$what: createMTPDraftContext makes the draft's context in the same group" \
        grep -Fxq '    return galloc_rn_in_context_group(this, [&] { return llama_init_from_model(model_dft, cparams); });' "$pkg/$w"
      expect "$what: initMultimodal makes mtmd's encoder in the same group" \
        grep -Fxq '        mtmd_wrapper = galloc_rn_in_context_group(this, [&] { return new llama_rn_context_mtmd(mmproj_path, use_gpu, model, ctx, params, has_multimodal, params, image_min_tokens, image_max_tokens); });' "$pkg/$w"
      expect "$what: the helper names the group after the llama.rn context and opens it only if none is open" \
        bash -c "grep -q '\"llama.rn-context-%p\"' '$pkg/$w' && grep -q '${fn}_group() == nullptr && ${fn}_begin(name)' '$pkg/$w'"
      expect "$what: rn-llama.cpp is the pristine one plus the helper and three calls" \
        cmp -s <(sed -e "/^\/\/ galloc-rn: a llama.rn context's llama.cpp contexts in one share group\./,/^\/\/ galloc-rn: end of the share group helper\.\$/{/^\/\/ galloc-rn: end/N;d}" \
                     -e 's/^\(.*\)galloc_rn_in_context_group(this, \[&\] { return \(.*\); });$/\1\2;/' "$pkg/$w") \
               "$pristine/$w"
      # (tests/amalgamation/packages_test.sh compiles it and runs its helper)
      expect_changed+=("$w")
    elif [[ $w == *rn-mtmd.hpp && $share == yes ]]; then
      expect "$what: rn-mtmd.hpp is the pristine one plus a llama_synchronize before each chunk's eval" \
        cmp -s <(grep -vFx "            llama_synchronize(ctx); // galloc-rn: the target done before mtmd takes the group's memory" "$pkg/$w") \
               "$pristine/$w"
      expect "$what: the wait comes right before mtmd_helper_eval_chunk_single" \
        grep -Pzq '            llama_synchronize\(ctx\); // galloc-rn[^\n]*\n            int32_t res = mtmd_helper_eval_chunk_single\(\n' "$pkg/$w"
      expect_changed+=("$w")
    elif [[ $w == *whisper.cpp && $share == yes ]]; then
      expect "$what: whisper_init_state renamed to a static whisper_init_state_unshared" \
        grep -Fxq 'static struct whisper_state * whisper_init_state_unshared(whisper_context * ctx) {' "$pkg/$w"
      expect "$what: the wrapper opens a share group per state" \
        grep -q "${fn}_begin(name)" "$pkg/$w"
      expect "$what: the wrapper names each group whisper-state-N from an atomic counter" \
        bash -c "grep -q 'std::atomic' '$pkg/$w' && grep -q '\"whisper-state-%llu\"' '$pkg/$w' && grep -Fxq '#include <atomic>' '$pkg/$w' && grep -Fxq '#include <cstdio>' '$pkg/$w'"
      expect "$what: the group is closed only when begin returned true" \
        grep -Pzq "if \\(began\\) \\{\\n\\s+${fn}_end\\(\\);" "$pkg/$w"
      expect "$what: the renamed one file defines ${fn}_begin/_end" \
        bash -c "grep -Eq '^bool ${fn}_begin\(const char\* name\) \{' '$pkg/$dir/ggml-alloc.cpp' &&
                 grep -Eq '^bool ${fn}_end\(void\) \{' '$pkg/$dir/ggml-alloc.cpp'"
      expect "$what: whisper.cpp is the pristine one plus the rename and the appended block" \
        cmp -s <(head -n "$(wc -l <"$pristine/$w")" "$pkg/$w" |
                 sed 's/^static struct whisper_state \* whisper_init_state_unshared(/struct whisper_state * whisper_init_state(/') \
               "$pristine/$w"
      # (tests/amalgamation/packages_test.sh compiles, links and runs it)
      expect_changed+=("$w")
    else
      expect "$what: $w unchanged" cmp -s "$pristine/$w" "$pkg/$w"
    fi
  done
  if [[ $vshare == no && $name == whisper.rn ]]; then
    expect "$what: whisper.cpp unchanged" cmp -s "$pristine/cpp/whisper.cpp" "$pkg/cpp/whisper.cpp"
  fi
  # Nothing else: the files diff -r reports are exactly the expected ones.
  local got want
  got=$(cd "$app" && diff -rq "$pristine" "node_modules/$name" 2>&1 |
        sed -E -e "s#^Only in $pristine/?([^:]*): #\1/#" -e "s#^Only in node_modules/$name/?([^:]*): #\1/#" \
               -e "s#^Files $pristine/([^ ]*) and .*#\1#" -e 's#^/##' | sort)
  want=$(printf '%s\n' "${expect_changed[@]}" | sort)
  if [[ $got == "$want" ]]; then pass "$what: no other file changed"
  else fail "$what: changed files differ from the expected ones"; diff <(echo "$want") <(echo "$got") | head; fi
  expect "$what: patches/$name+$version.patch written" test -s "$app/patches/$name+$version.patch"
}

i=0
for group in "${APP_GROUPS[@]}"; do
  i=$((i + 1))
  app=$WORK/app$i pristine=$WORK/pristine$i
  make_app "$app"
  specs=($group) has_llama=no
  for spec in "${specs[@]}"; do
    name=${spec%@*} version=${spec#*@}
    install_package "$app" "$name" "$version"
    install_package "$pristine" "$name" "$version"
    [[ $name == llama.rn || $name == cui-llama.rn ]] && has_llama=yes
  done
  echo "== app$i: $group"
  h0=$(treehash "$app")

  "${G[@]}" apply --app "$app" >"$WORK/out" 2>&1; rc=$?
  expect "app$i: apply exits 0" test $rc -eq 0 || cat "$WORK/out"
  "${G[@]}" check --app "$app" >"$WORK/out" 2>&1
  expect "app$i: check passes after apply" test $? -eq 0 || cat "$WORK/out"
  for spec in "${specs[@]}"; do
    check_edits "$app" "$pristine/node_modules/${spec%@*}" "${spec%@*}" "${spec#*@}" yes
  done
  expect "app$i: package.json runs patch-package on postinstall" \
    node -e "process.exit(require('$app/package.json').scripts.postinstall === 'patch-package' ? 0 : 1)"
  if [[ $has_llama == yes ]]; then
    expect "app$i: gradle.properties sets rnllamaBuildFromSource=true" \
      grep -Fxq 'rnllamaBuildFromSource=true' "$app/android/gradle.properties"
  else
    expect "app$i: gradle.properties untouched (no llama package)" \
      cmp -s "$app/android/gradle.properties" <(printf '%s' "$GRADLE_TEXT")
  fi

  h1=$(treehash "$app")
  "${G[@]}" apply --app "$app" >"$WORK/out" 2>&1; rc=$?
  expect "app$i: apply again exits 0" test $rc -eq 0
  expect "app$i: apply again says nothing changed" grep -q 'nothing changed' "$WORK/out"
  expect "app$i: apply again changes no byte" test "$(treehash "$app")" = "$h1"

  "${G[@]}" apply --no-share --app "$app" >"$WORK/out" 2>&1; rc=$?
  expect "app$i: apply --no-share exits 0" test $rc -eq 0
  for spec in "${specs[@]}"; do
    check_edits "$app" "$pristine/node_modules/${spec%@*}" "${spec%@*}" "${spec#*@}" no
  done
  "${G[@]}" check --app "$app" >"$WORK/out" 2>&1
  expect "app$i: check passes after apply --no-share" test $? -eq 0
  "${G[@]}" apply --app "$app" >"$WORK/out" 2>&1
  expect "app$i: apply after --no-share gives the same tree as the first apply" test "$(treehash "$app")" = "$h1"

  "${G[@]}" revert --app "$app" >"$WORK/out" 2>&1; rc=$?
  expect "app$i: revert exits 0" test $rc -eq 0 || cat "$WORK/out"
  expect "app$i: revert restores the tree byte for byte" test "$(treehash "$app")" = "$h0"
  "${G[@]}" check --app "$app" >"$WORK/out" 2>&1; rc=$?
  expect "app$i: check fails after revert" test $rc -ne 0
  expect "app$i: check says ggml-alloc.c is still there" grep -q 'ggml-alloc.c is still there' "$WORK/out"
  rm -rf "$app" "$pristine"
done
finish
