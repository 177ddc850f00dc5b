'use strict';
// The app's own files that galloc-rn edits: package.json (the postinstall that runs
// patch-package), android/gradle.properties (llama.rn's switch to build from source), and
// patches/galloc-rn.json, which records those two edits so that revert undoes exactly them.

const path = require('node:path');
const { readText } = require('./files');
const { UserError } = require('./errors');

const STATE = 'patches/galloc-rn.json';
const GRADLE = 'android/gradle.properties';

function files(appDir) {
  return {
    packageJson: path.join(appDir, 'package.json'),
    gradle: path.join(appDir, GRADLE),
    state: path.join(appDir, STATE),
    patches: path.join(appDir, 'patches'),
  };
}

function readState(appDir) {
  const text = readText(files(appDir).state);
  if (text === null) return null;
  try {
    return JSON.parse(text);
  } catch {
    throw new UserError(`${STATE} is not valid JSON; fix or remove it`, STATE);
  }
}

function stateText(state) {
  return JSON.stringify(state, null, 2) + '\n';
}

// package.json as text, parsed, with its layout (indent, final newline) to write it back.
function readPackageJson(appDir) {
  const file = files(appDir).packageJson;
  const text = readText(file);
  if (text === null) throw new UserError(`no package.json in ${appDir}: run galloc-rn in the app's root (or pass --app DIR)`);
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    throw new UserError('package.json is not valid JSON', 'package.json');
  }
  const m = /^([ \t]+)"/m.exec(text);
  const crlf = text.includes('\r\n');
  return { text, json, indent: m ? m[1] : '  ', crlf, finalNewline: /\n$/.test(text) };
}

function writePackageJson(pj) {
  let out = JSON.stringify(pj.json, null, pj.indent) + (pj.finalNewline ? '\n' : '');
  if (pj.crlf) out = out.replace(/\n/g, '\r\n');
  return out;
}

const RUNS_PATCH_PACKAGE = /(^|[\s;&|(])(npx\s+)?patch-package(\s|$|[;&|)])/;

// The postinstall edit: {text, record, note} (text null: nothing to change).
function postinstallEdit(appDir, state) {
  const pj = readPackageJson(appDir);
  const scripts = pj.json.scripts;
  const cur = scripts && typeof scripts === 'object' ? scripts.postinstall : undefined;
  if (typeof cur === 'string' && RUNS_PATCH_PACKAGE.test(cur)) {
    return { text: null, record: state && state.postinstall, note: null };
  }
  const record = { before: typeof cur === 'string' ? cur : null, scriptsAdded: !scripts };
  if (!scripts) pj.json.scripts = {};
  record.after = record.before === null ? 'patch-package' : `${record.before} && patch-package`;
  pj.json.scripts.postinstall = record.after;
  return {
    text: writePackageJson(pj),
    record,
    note: record.before === null
      ? 'package.json: added the script "postinstall": "patch-package"'
      : `package.json: postinstall now ends with "&& patch-package"`,
  };
}

function postinstallRuns(appDir) {
  const s = readPackageJson(appDir).json.scripts;
  return Boolean(s && typeof s.postinstall === 'string' && RUNS_PATCH_PACKAGE.test(s.postinstall));
}

function gradleValue(text, property) {
  let value;
  for (const line of text.split(/\r?\n/)) {
    const m = new RegExp(`^\\s*${property}\\s*[=:]\\s*(.*?)\\s*$`).exec(line);
    if (m) value = m[1];
  }
  return value;
}

// The gradle.properties edit: {text, record, note}; text null when nothing to change.
function gradleEdit(appDir, property) {
  const text = readText(files(appDir).gradle);
  if (text === null) {
    return { text: null, note: `no ${GRADLE} here: set ${property}=true in your Android project's gradle.properties` };
  }
  const value = gradleValue(text, property);
  if (value === 'true') return { text: null, note: null };
  if (value !== undefined) {
    return { text: null, note: `${GRADLE} sets ${property}=${value}: galloc is built in only with ${property}=true; change it yourself` };
  }
  const appended = (text === '' || text.endsWith('\n') ? '' : '\n') +
    '# galloc-rn: build llama.rn / cui-llama.rn from source, with galloc (npx galloc-rn revert removes this)\n' +
    `${property}=true\n`;
  return { text: text + appended, record: { appended }, note: `${GRADLE}: added ${property}=true` };
}

function gradleIsSet(appDir, property) {
  const text = readText(files(appDir).gradle);
  return text === null ? null : gradleValue(text, property) === 'true';
}

// revert's edits of package.json and gradle.properties: {changes, notes}.
function revertEdits(appDir, state) {
  const changes = [];
  const notes = [];
  const f = files(appDir);
  if (state.postinstall) {
    const pj = readPackageJson(appDir);
    const s = pj.json.scripts;
    if (s && s.postinstall === state.postinstall.after) {
      if (state.postinstall.before === null) delete s.postinstall;
      else s.postinstall = state.postinstall.before;
      if (state.postinstall.scriptsAdded && Object.keys(s).length === 0) delete pj.json.scripts;
      changes.push({ file: f.packageJson, text: writePackageJson(pj) });
      notes.push('package.json: removed the postinstall galloc-rn added');
    } else {
      notes.push('package.json: postinstall has changed since galloc-rn set it; left as it is');
    }
  }
  if (state.gradle) {
    const text = readText(f.gradle);
    const { appended } = state.gradle;
    if (text !== null && text.includes(appended)) {
      const at = text.endsWith(appended) ? text.length - appended.length : text.indexOf(appended);
      changes.push({ file: f.gradle, text: text.slice(0, at) + text.slice(at + appended.length) });
      notes.push(`${GRADLE}: removed the lines galloc-rn added`);
    } else {
      notes.push(`${GRADLE}: the lines galloc-rn added are no longer there; left as it is`);
    }
  }
  return { changes, notes };
}

module.exports = {
  STATE, GRADLE, files, readState, stateText, postinstallEdit, postinstallRuns, gradleEdit,
  gradleIsSet, revertEdits,
};
