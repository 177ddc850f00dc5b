'use strict';
// File access for galloc-rn. Texts are byte strings ('latin1': one char per byte), so that
// every byte read is written back as it was, whatever the encoding.

const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');
const { UserError } = require('./errors');

function sha256(text) {
  return crypto.createHash('sha256').update(Buffer.from(text, 'latin1')).digest('hex');
}

// The file's text, or null if there is none.
function readText(file) {
  try {
    return fs.readFileSync(file, 'latin1');
  } catch (e) {
    if (e.code === 'ENOENT' || e.code === 'ENOTDIR') return null;
    throw new UserError(`cannot read ${file}: ${e.code || e.message}`, file);
  }
}

function writable(p) {
  try {
    fs.accessSync(p, fs.constants.W_OK);
    return true;
  } catch {
    return false;
  }
}

// The nearest folder of `p` that exists.
function existingAncestor(p) {
  let d = path.dirname(p);
  while (!fs.existsSync(d) && path.dirname(d) !== d) d = path.dirname(d);
  return d;
}

// Writes a set of changes all or nothing: changes = [{file, text}] where text null deletes
// the file. First checks that every file (and the folder of each created or deleted one) is
// writable; then writes, and if a write fails, puts back what was written before it.
// `display` turns a path into the name used in messages.
function commit(changes, display = (f) => f) {
  for (const { file, text } of changes) {
    const exists = fs.existsSync(file);
    if (exists && !writable(file)) {
      throw new UserError(`${display(file)} is read-only; make it writable (chmod u+w) and run again`, file);
    }
    if (!exists || text === null) {
      const dir = exists ? path.dirname(file) : existingAncestor(file);
      if (!writable(dir)) {
        throw new UserError(`cannot ${text === null ? 'delete' : 'create'} ${display(file)}: its folder ${display(dir)} is read-only`, file);
      }
    }
  }
  const done = [];
  try {
    for (const { file, text } of changes) {
      const before = fs.existsSync(file)
        ? { text: fs.readFileSync(file, 'latin1'), mode: fs.statSync(file).mode & 0o7777 }
        : null;
      const madeDir = before === null && text !== null ? mkdirs(path.dirname(file)) : null;
      done.push({ file, before, madeDir });
      if (text === null) fs.unlinkSync(file);
      else fs.writeFileSync(file, text, { encoding: 'latin1', mode: 0o644 });
    }
  } catch (e) {
    const failed = done.length ? done[done.length - 1].file : changes[0].file;
    rollback(done);
    throw new UserError(`cannot write ${display(failed)} (${e.code || e.message}); nothing of it was changed`, failed);
  }
}

// Creates dir and its missing parents; returns the topmost folder it created, or null.
function mkdirs(dir) {
  if (fs.existsSync(dir)) return null;
  const top = fs.mkdirSync(dir, { recursive: true });
  return top || null;
}

function rollback(done) {
  for (const { file, before, madeDir } of done.reverse()) {
    try {
      if (before === null) fs.rmSync(file, { force: true });
      else {
        fs.writeFileSync(file, before.text, { encoding: 'latin1', mode: before.mode });
        fs.chmodSync(file, before.mode);
      }
      if (madeDir) fs.rmSync(madeDir, { recursive: true, force: true });
    } catch {
      // best effort: the first error is the one reported
    }
  }
}

module.exports = { sha256, readText, commit };
