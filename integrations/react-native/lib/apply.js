'use strict';
// `galloc-rn apply`: puts galloc's ggml-alloc.cpp into every supported package installed,
// each package all or nothing, then sets up the app (postinstall, gradle.properties).

const fs = require('node:fs');
const path = require('node:path');
const P = require('./pkg');
const app = require('./app');
const { readText, commit } = require('./files');
const { UserError } = require('./errors');
const edits = require('./edits');
const { supportedVersions, PACKAGE_NAMES } = require('./versions');

function unsupported(pkg) {
  return `${pkg.name}@${pkg.version} is not supported by galloc-rn ${P.TOOL_VERSION} ` +
    `(supported: ${supportedVersions(pkg.name).join(', ')})`;
}

function noPackages(appDir) {
  return new UserError(`found none of ${PACKAGE_NAMES.join(', ')} in ${path.join(appDir, 'node_modules')}; ` +
    'run galloc-rn in the app\'s root after npm install (or pass --app DIR)');
}

// One package: returns 'changed' or 'unchanged'; throws UserError having changed nothing.
function applyPackage(appDir, pkg, share, say) {
  const L = P.layout(appDir, pkg);
  const orig = P.pristine(appDir, pkg);
  const patchNow = readText(L.patch);
  if (patchNow !== null && !P.isOurPatch(patchNow)) {
    throw new UserError(`${L.patchRel} exists and was not written by galloc-rn; patch-package takes one patch ` +
      'per package version: move it away (or merge it by hand after apply) and run again', L.patchRel);
  }
  const t = P.target(appDir, pkg, orig, share);
  const cur = P.current(appDir, pkg, Object.keys(t.files));
  const changes = [];
  for (const [rel, text] of Object.entries(t.files)) {
    if (cur[rel] !== text) changes.push({ file: L.abs(rel), text });
  }
  if (patchNow !== t.patch) changes.push({ file: L.patch, text: t.patch });
  const what = `${pkg.name}@${pkg.version}`;
  if (changes.length === 0) {
    say(`${what}: already applied (${share ? 'share groups' : 'no sharing'}); nothing changed`);
    return 'unchanged';
  }
  commit(changes, (f) => path.relative(appDir, f));
  const edited = pkg.entry.lineEdits.map((l) => L.rel(l.file));
  say(`${what}: ${L.rel(L.allocC)} replaced by galloc's ggml-alloc.cpp` +
    (pkg.entry.prefix ? ` (renamed ${pkg.entry.prefix}_ggml_)` : '') +
    `; ggml-alloc.c -> ggml-alloc.cpp in ${edited.join(', ')}`);
  const shareEdits = pkg.entry.shareEdits;
  if (shareEdits.length && share) {
    shareEdits.forEach((w) => say(`${what}: ${L.rel(w.file)}: ${edits.SHARE_EDITS[w.kind].says}`));
  } else if (shareEdits.length) {
    say(`${what}: no share groups (--no-share)`);
  }
  say(`${what}: wrote ${L.patchRel}`);
  return 'changed';
}

function apply(appDir, { share }, say) {
  const pkgs = P.installedPackages(appDir);
  if (pkgs.length === 0) throw noPackages(appDir);
  const patchesExisted = fs.existsSync(app.files(appDir).patches);
  let failed = false;
  let changed = false;
  const done = [];
  for (const pkg of pkgs) {
    if (!pkg.entry) {
      say(`${unsupported(pkg)}; nothing of it was changed`);
      failed = true;
      continue;
    }
    try {
      if (applyPackage(appDir, pkg, share, say) === 'changed') changed = true;
      done.push(pkg);
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      say(`${pkg.name}@${pkg.version}: ${e.message}. Nothing of ${pkg.name} was changed.`);
      failed = true;
    }
  }
  const todo = [];
  if (done.length) {
    // The app: postinstall, gradle.properties, and the record of both.
    const f = app.files(appDir);
    const stateBefore = readText(f.state);
    const state = app.readState(appDir) || {
      note: 'written by galloc-rn: what it added to package.json and android/gradle.properties, ' +
        'for `npx galloc-rn revert`',
      patchesDirCreated: !patchesExisted,
    };
    const changes = [];
    const notes = [];
    const pi = app.postinstallEdit(appDir, state);
    if (pi.text !== null) {
      changes.push({ file: f.packageJson, text: pi.text });
      state.postinstall = pi.record;
      notes.push(pi.note);
    }
    const props = [...new Set(done.map((p) => p.entry.buildFromSource.gradleProperty).filter(Boolean))];
    for (const prop of props) {
      const g = app.gradleEdit(appDir, prop);
      if (g.text !== null) {
        changes.push({ file: f.gradle, text: g.text });
        state.gradle = g.record;
        notes.push(g.note);
      } else if (g.note) todo.push(g.note);
    }
    const stateText = app.stateText(state);
    if (stateText !== stateBefore) changes.push({ file: f.state, text: stateText });
    if (changes.length) {
      try {
        commit(changes, (p) => path.relative(appDir, p));
        changed = true;
        notes.forEach((n) => say(n));
      } catch (e) {
        if (!(e instanceof UserError)) throw e;
        say(`${e.message}: add "postinstall": "patch-package" to package.json's scripts yourself`);
        failed = true;
      }
    }
    for (const ios of new Set(done.map((p) => p.entry.buildFromSource.ios).filter(Boolean))) {
      const names = done.filter((p) => p.entry.buildFromSource.ios === ios).map((p) => p.name);
      const link = names.length > 1 ? 'link their prebuilt frameworks' : 'links its prebuilt framework';
      todo.push(`iOS: install pods with \`${ios}\` in ios/ (without it, ${names.join(' and ')} ${link}, built without galloc)`);
    }
    if (changed) {
      todo.push('commit patches/ and package.json; `npm install` then runs patch-package, which puts the change back');
      const rebuilds = new Set(done.map((p) => p.entry.rebuild ||
        'rebuild the native app (Android and iOS) so that ggml-alloc.cpp is compiled in'));
      rebuilds.forEach((r) => todo.push(r));
    }
  }
  if (!changed && !failed) say('Everything was applied already; nothing changed.');
  if (todo.length) {
    say('Still to do:');
    todo.forEach((t) => say(`  - ${t}`));
  }
  return failed ? 1 : 0;
}

module.exports = { apply, unsupported, noPackages };
