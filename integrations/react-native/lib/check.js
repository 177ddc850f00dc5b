'use strict';
// `galloc-rn check`: exit 0 exactly when every installed supported package carries this
// galloc-rn's change (the files as apply writes them now, and the patch file) and the app
// runs patch-package on install.

const path = require('node:path');
const P = require('./pkg');
const app = require('./app');
const { readText } = require('./files');
const { UserError } = require('./errors');
const edits = require('./edits');
const { unsupported, noPackages } = require('./apply');

function check(appDir, say) {
  const pkgs = P.installedPackages(appDir);
  if (pkgs.length === 0) throw noPackages(appDir);
  const problems = [];
  const ok = [];
  for (const pkg of pkgs) {
    const what = `${pkg.name}@${pkg.version}`;
    if (!pkg.entry) { problems.push(unsupported(pkg)); continue; }
    const L = P.layout(appDir, pkg);
    try {
      const orig = P.pristine(appDir, pkg);
      if (!orig.applied) {
        problems.push(`${what}: ${L.rel(L.allocC)} is still there; run \`npx patch-package\` ` +
          `(if ${L.patchRel} exists) or \`npx galloc-rn apply\``);
        continue;
      }
      if (orig.header.toolVersion !== P.TOOL_VERSION) {
        problems.push(`${what}: changed by galloc-rn ${orig.header.toolVersion}, this is ${P.TOOL_VERSION}; run \`npx galloc-rn apply\``);
        continue;
      }
      const t = P.target(appDir, pkg, orig, orig.header.share);
      const cur = P.current(appDir, pkg, Object.keys(t.files));
      const bad = Object.keys(t.files).filter((rel) => cur[rel] !== t.files[rel]).map((rel) => L.rel(rel));
      const patch = readText(L.patch);
      if (patch === null) bad.push(`${L.patchRel} (missing)`);
      else if (patch !== t.patch) bad.push(L.patchRel);
      if (bad.length) {
        problems.push(`${what}: not as galloc-rn ${P.TOOL_VERSION} writes it: ${bad.join(', ')}; run \`npx galloc-rn apply\``);
        continue;
      }
      const prop = pkg.entry.buildFromSource.gradleProperty;
      if (prop && app.gradleIsSet(appDir, prop) === false) {
        problems.push(`${what}: ${app.GRADLE} does not set ${prop}=true, so Android links the prebuilt library`);
        continue;
      }
      const shareEdits = pkg.entry.shareEdits;
      const mode = shareEdits.length && orig.header.share
        ? shareEdits.map((w) => edits.SHARE_EDITS[w.kind].mode).join('; ') : 'no share groups';
      ok.push(`${what}: galloc-rn ${P.TOOL_VERSION}'s ggml-alloc.cpp, ${mode}`);
    } catch (e) {
      if (!(e instanceof UserError)) throw e;
      problems.push(`${what}: ${e.message}`);
    }
  }
  if (!app.postinstallRuns(appDir)) {
    problems.push(`${path.join(appDir, 'package.json')}: no "postinstall" that runs patch-package; run \`npx galloc-rn apply\``);
  }
  ok.forEach((l) => say(`ok   ${l}`));
  problems.forEach((l) => say(`FAIL ${l}`));
  return problems.length ? 1 : 0;
}

module.exports = { check };
