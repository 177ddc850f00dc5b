# Sourced by the tests that build a package as an app gets it from galloc-rn (packages_test.sh,
# tests/rpc/rpc_test.sh). Needs ROOT, the galloc checkout.

# pack_galloc_rn DIR: galloc-rn as an app installs it, npm pack (its prepack writes the one
# file) then unpacked in DIR; sets TOOL to its galloc-rn.js
pack_galloc_rn() {
    local dir=$1
    rm -rf "$dir" && mkdir -p "$dir"
    (cd "$ROOT/integrations/react-native" && npm pack --pack-destination "$dir" --loglevel=error) \
        >"$dir/pack.log" 2>&1 || { tail -n 20 "$dir/pack.log"; echo "FAIL: npm pack of galloc-rn failed" >&2; return 1; }
    tar -xzf "$dir"/galloc-rn-*.tgz -C "$dir"
    TOOL=$dir/package/bin/galloc-rn.js
}

# app_with_package SPEC APP: a scratch app with the package's tarball, as npm serves it, in
# APP/node_modules; APP.tarball names the tarball
app_with_package() {
    local spec=$1 app=$2
    local name=${spec%@*}
    (NPM_SPEC=$spec; source "$ROOT/integrations/ggml/package.sh"; fetch_tarball >&2; echo "$TARBALL") >"$app.tarball" \
        || return 1
    rm -rf "$app" && mkdir -p "$app/node_modules/$name"
    tar -xzf "$(cat "$app.tarball")" -C "$app/node_modules/$name" --strip-components=1 --no-same-owner || return 1
    printf '{\n  "name": "packages-test-app",\n  "version": "1.0.0",\n  "private": true\n}\n' >"$app/package.json"
}

# apply_galloc_rn APP: galloc-rn apply run in the app (sharing on, as by default)
apply_galloc_rn() {
    local app=$1
    node "$TOOL" apply --app "$app" >"$app.log" 2>&1 || { tail -n 20 "$app.log"; return 1; }
}

# patched_app SPEC APP: both
patched_app() {
    app_with_package "$1" "$2" && apply_galloc_rn "$2"
}
