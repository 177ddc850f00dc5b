'use strict';
// `galloc-rn revert`: puts back every file galloc-rn changed, byte for byte, and removes the
// patch files, postinstall and gradle.properties lines it added.

const fs = require('node:fs');
const path = require('node:path');
const P = require('./pkg');
const app = require('./app');
const { readText, commit } = require('./files');
const { UserError } = require('./errors');
const { PACKAGE_NAMES } = require('./versions');

function revert(appDir, say) {
  const pkgs = P.installedPackages(appDir);
  const display = (f) => path.relative(appDir, f);
  let failed = false;
  let anything = false;
  for (const pkg of pkgs) {
    const what = `${pkg.name}@${pkg.version}`;
    if (!pkg.entry) continue;
    const L = P.layout(appDir, pkg);
    try {
      const patch = readText(L.patch);
      const ours = patch !== null && P.isOurPatch(patch);
      const header = P.appliedHeader(appDir, pkg);
      if (!header && !ours) continue; // galloc-rn never touched it
      const orig = P.pristine(appDir, pkg);
      const changes = [];
      if (orig.applied) {
        changes.push({ file: L.abs(L.allocCpp), text: null });
        for (const [rel, text] of Object.entries(orig.files)) {
          if (readText(L.abs(rel)) !== text) changes.push({ file: L.abs(rel), text });
        }
      }
      if (ours) changes.push({ file: L.patch, text: null });
      commit(changes, display);
      anything = true;
      if (orig.applied) {
        const edited = L.edited.map((rel) => L.rel(rel)).join(', ');
        say(`${what}: removed ggml-alloc.cpp; restored ${L.rel(L.allocC)}, ${edited}`);
      }
      if (ours) say(`${what}: removed ${L.patchRel}`);
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      say(`${what}: ${e.message}. Nothing of ${pkg.name} was changed.`);
      failed = true;
    }
  }
  // galloc-rn's patches for versions no longer installed (the package was upgraded since).
  const patchesDir = app.files(appDir).patches;
  const installed = new Set(pkgs.map((p) => P.patchName(p.name, p.version)));
  const known = new RegExp(`^(${PACKAGE_NAMES.map((n) => n.replace(/\./g, '\\.')).join('|')})\\+.+\\.patch$`);
  const stale = fs.existsSync(patchesDir)
    ? fs.readdirSync(patchesDir).filter((f) => known.test(f) && !installed.has(f) &&
        P.isOurPatch(readText(path.join(patchesDir, f)) || ''))
    : [];
  for (const f of stale) {
    try {
      commit([{ file: path.join(patchesDir, f), text: null }], display);
      say(`removed patches/${f} (for a version that is not installed)`);
      anything = true;
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      say(e.message);
      failed = true;
    }
  }

  const state = app.readState(appDir);
  if (state && !failed) {
    const f = app.files(appDir);
    const { changes, notes } = app.revertEdits(appDir, state);
    changes.push({ file: f.state, text: null });
    commit(changes, display);
    notes.forEach((n) => say(n));
    if (state.patchesDirCreated && fs.existsSync(f.patches) && fs.readdirSync(f.patches).length === 0) {
      fs.rmdirSync(f.patches);
    }
    anything = true;
  }
  if (!anything && !failed) say('Nothing to revert: galloc-rn\'s changes are not in this app.');
  return failed ? 1 : 0;
}

module.exports = { revert };
