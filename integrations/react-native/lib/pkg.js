'use strict';
// One installed package: where its files are, what they were as npm served them (pristine),
// and what galloc-rn makes of them (target), all in memory.

const fs = require('node:fs');
const path = require('node:path');
const { VERSIONS, PACKAGE_NAMES, findVersion } = require('./versions');
const edits = require('./edits');
const { patchFile, deletedText } = require('./patch');
const { sha256, readText } = require('./files');
const { UserError } = require('./errors');

const TOOL_VERSION = require('../package.json').version;
const ONE_FILE = path.join(__dirname, '..', 'dist', 'ggml-alloc.cpp');

let oneFileText = null;
function oneFile() {
  if (oneFileText === null) {
    oneFileText = readText(ONE_FILE);
    if (oneFileText === null) {
      throw new UserError(`${ONE_FILE} is missing: galloc-rn's tarball carries it (npm pack writes it); ` +
        'in a galloc checkout run `npm run prepack` in integrations/react-native');
    }
  }
  return oneFileText;
}

// The packages galloc-rn knows that are installed in the app: [{name, version, dir, entry}]
// (entry null for a version it does not support).
function installedPackages(appDir) {
  const found = [];
  for (const name of PACKAGE_NAMES) {
    const dir = path.join(appDir, 'node_modules', name);
    const pj = readText(path.join(dir, 'package.json'));
    if (pj === null) continue;
    let version;
    try {
      version = JSON.parse(pj).version;
    } catch {
      throw new UserError(`${path.join(dir, 'package.json')} is not valid JSON; reinstall ${name}`);
    }
    found.push({ name, version, dir, entry: findVersion(name, version) });
  }
  return found;
}

function patchName(name, version) {
  return `${name.replace(/\//g, '+')}+${version}.patch`;
}

// Every file galloc-rn reads or writes for one package, relative to the app.
function layout(appDir, pkg) {
  const e = pkg.entry;
  const rel = (f) => path.posix.join('node_modules', pkg.name, f);
  return {
    allocC: path.posix.join(e.ggmlDir, 'ggml-alloc.c'),
    allocCpp: path.posix.join(e.ggmlDir, 'ggml-alloc.cpp'),
    edited: [...e.lineEdits.map((l) => l.file), ...e.shareEdits.map((w) => w.file)],
    rel,
    abs: (f) => path.join(appDir, rel(f)),
    patch: path.join(appDir, 'patches', patchName(pkg.name, pkg.version)),
    patchRel: path.posix.join('patches', patchName(pkg.name, pkg.version)),
  };
}

// What galloc-rn wrote, as ggml-alloc.cpp's first two lines say: {toolVersion, share} or null.
function appliedHeader(appDir, pkg) {
  const L = layout(appDir, pkg);
  const cpp = readText(L.abs(L.allocCpp));
  return cpp === null ? null : edits.readHeader(cpp);
}

// Does a patch file come from galloc-rn? (It creates ggml-alloc.cpp with galloc-rn's header.)
function isOurPatch(text) {
  return /^\+\/\/ galloc-rn \S+ wrote this file for /m.test(text);
}

// The package's files as npm served them, from the installed tree: as they are when
// untouched, else by undoing galloc-rn's edits (ggml-alloc.c comes back from the patch file).
// Each is checked against the sha256 in versions.js; a mismatch is a change by someone else.
function pristine(appDir, pkg) {
  const e = pkg.entry;
  const L = layout(appDir, pkg);
  const foreign = (f, what) => new UserError(
    `${L.rel(f)} ${what}; galloc-rn changes only files as ${pkg.name}@${pkg.version} ships them. ` +
    `Reinstall the package (rm -rf node_modules/${pkg.name} && npm install) and run again`, L.rel(f));
  const out = { files: {}, applied: false };

  // The prefix its ggml.h gives, which the renaming relies on.
  const header = readText(L.abs(e.ggmlHeader));
  if (header === null) throw foreign(e.ggmlHeader, 'is missing');
  if (edits.detectPrefix(header) !== e.prefix) throw foreign(e.ggmlHeader, 'has changed (not the expected symbol prefix)');
  out.quants = readText(L.abs(path.posix.join(e.ggmlDir, 'ggml-quants.h')));

  const c = readText(L.abs(L.allocC));
  const cpp = readText(L.abs(L.allocCpp));
  if (c !== null && cpp !== null) throw foreign(L.allocCpp, 'exists beside ggml-alloc.c');
  if (c === null && cpp === null) throw foreign(L.allocC, 'is missing');
  if (c !== null) {
    if (sha256(c) !== e.ggmlAllocSha256) throw foreign(L.allocC, 'has been changed');
    out.files[L.allocC] = c;
  } else {
    const h = edits.readHeader(cpp);
    if (!h || h.name !== pkg.name || h.version !== pkg.version) {
      throw foreign(L.allocCpp, 'was not written by galloc-rn for this version');
    }
    out.applied = true;
    out.header = h;
    const patch = readText(L.patch);
    const original = patch === null ? null : deletedText(patch, L.rel(L.allocC));
    if (original === null || sha256(original) !== e.ggmlAllocSha256) {
      throw new UserError(`${L.patchRel} is missing or does not hold ${pkg.name}'s ggml-alloc.c, ` +
        `which galloc-rn needs to put it back. Reinstall the package (rm -rf node_modules/${pkg.name} ` +
        '&& npm install) and run again', L.patchRel);
    }
    out.files[L.allocC] = original;
  }
  for (const le of e.lineEdits) {
    const text = readText(L.abs(le.file));
    if (text === null) throw foreign(le.file, 'is missing');
    if (sha256(text) === le.sha256) { out.files[le.file] = text; continue; }
    const undone = edits.replaceLine(text, edits.cppLine(le.line), le.line);
    if (undone === null || sha256(undone) !== le.sha256) throw foreign(le.file, 'has been changed');
    out.files[le.file] = undone;
  }
  for (const w of e.shareEdits) {
    const text = readText(L.abs(w.file));
    if (text === null) throw foreign(w.file, 'is missing');
    if (sha256(text) === w.sha256) out.files[w.file] = text;
    else {
      const undone = edits.SHARE_EDITS[w.kind].unshare(text);
      if (sha256(undone) !== w.sha256) throw foreign(w.file, 'has been changed');
      out.files[w.file] = undone;
    }
  }
  return out;
}

// What galloc-rn writes: {files: {rel: text|null}, patch}, from the pristine files.
function target(appDir, pkg, orig, share) {
  const e = pkg.entry;
  const L = layout(appDir, pkg);
  const files = {};
  const rules = edits.renameRules(e.prefix, orig.quants);
  const cpp = edits.galloccpp({
    oneFile: oneFile(), rules, toolVersion: TOOL_VERSION, name: pkg.name, version: pkg.version, share,
  });
  files[L.allocC] = null;
  files[L.allocCpp] = cpp;
  for (const le of e.lineEdits) {
    files[le.file] = edits.replaceLine(orig.files[le.file], le.line, edits.cppLine(le.line));
  }
  for (const w of e.shareEdits) {
    const edit = edits.SHARE_EDITS[w.kind];
    if (share) {
      for (const fn of edit.uses.map((u) => `${edits.shareName(e.prefix)}_${u}`)) {
        if (!new RegExp(`\\b${fn}\\s*\\([^)]*\\)\\s*\\{`).test(cpp)) {
          throw new UserError(`galloc-rn's ggml-alloc.cpp, renamed for ${pkg.name}, does not define ${fn}; ` +
            'this galloc-rn cannot open share groups there (use --no-share)');
        }
      }
      files[w.file] = edit.share(orig.files[w.file], e.prefix, TOOL_VERSION);
      if (files[w.file] === null) {
        throw new UserError(`${L.rel(w.file)} is not laid out as galloc-rn expects for ${pkg.name}@${pkg.version}; ` +
          'this is a bug in galloc-rn (its sha256 matched): use --no-share, and report it', L.rel(w.file));
      }
    } else {
      files[w.file] = orig.files[w.file];
    }
  }
  const changes = [];
  for (const [rel, text] of Object.entries(files)) {
    const old = rel === L.allocCpp ? null : orig.files[rel];
    if (old !== text) changes.push({ path: L.rel(rel), oldText: old, newText: text });
  }
  return { files, patch: patchFile(changes) };
}

// The installed files of a package, for comparing with a target: {rel: text|null}.
function current(appDir, pkg, rels) {
  const L = layout(appDir, pkg);
  const out = {};
  for (const rel of rels) out[rel] = readText(L.abs(rel));
  return out;
}

module.exports = {
  TOOL_VERSION, VERSIONS, installedPackages, layout, pristine, target, current, appliedHeader,
  isOurPatch, patchName,
};
