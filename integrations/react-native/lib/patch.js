'use strict';
// Writes patch-package's patch files: git-style diffs with a/node_modules/NAME/... and
// b/node_modules/NAME/... paths, as `git diff` writes them (patch-package 8 parses them in
// dist/patch/parse.js and applies them in dist/patch/apply.js). Line diffs come from Myers'
// O(ND) algorithm on the lines between the common prefix and suffix.

const crypto = require('node:crypto');

const CONTEXT = 3; // git's default context lines around a change

// A text as lines without their '\n'; `noFinalNewline` when the last line has none.
function splitLines(text) {
  if (text === '') return { lines: [], noFinalNewline: false };
  const lines = text.split('\n');
  const noFinalNewline = lines[lines.length - 1] !== '';
  if (!noFinalNewline) lines.pop();
  return { lines, noFinalNewline };
}

// git's abbreviated blob id, for the `index` line.
function blobId(text) {
  if (text === null) return '0000000';
  const body = Buffer.from(text, 'latin1'); // texts are byte strings (see files.js)
  const h = crypto.createHash('sha1');
  h.update(`blob ${body.length}\0`);
  h.update(body);
  return h.digest('hex').slice(0, 7);
}

// The edit script from a to b (arrays of strings): a list of ['=', i, j], ['-', i], ['+', j].
function diffLines(a, b) {
  let pre = 0;
  while (pre < a.length && pre < b.length && a[pre] === b[pre]) pre++;
  let suf = 0;
  while (suf < a.length - pre && suf < b.length - pre &&
         a[a.length - 1 - suf] === b[b.length - 1 - suf]) suf++;
  const ops = [];
  for (let i = 0; i < pre; i++) ops.push(['=', i, i]);
  const A = a.slice(pre, a.length - suf);
  const B = b.slice(pre, b.length - suf);
  for (const op of myers(A, B)) {
    if (op[0] === '=') ops.push(['=', op[1] + pre, op[2] + pre]);
    else if (op[0] === '-') ops.push(['-', op[1] + pre]);
    else ops.push(['+', op[1] + pre]);
  }
  for (let k = suf; k > 0; k--) ops.push(['=', a.length - k, b.length - k]);
  return ops;
}

function myers(a, b) {
  const n = a.length;
  const m = b.length;
  const max = n + m;
  const off = max + 1;
  let v = new Int32Array(2 * max + 3);
  const trace = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x;
      if (k === -d || (k !== d && v[off + k - 1] < v[off + k + 1])) x = v[off + k + 1];
      else x = v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) { x++; y++; }
      v[off + k] = x;
      if (x >= n && y >= m) { found = d; break; }
    }
  }
  // Walk back through the saved V arrays.
  const ops = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const vd = trace[d];
    const k = x - y;
    let prevK;
    if (k === -d || (k !== d && vd[off + k - 1] < vd[off + k + 1])) prevK = k + 1;
    else prevK = k - 1;
    const prevX = vd[off + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) { x--; y--; ops.push(['=', x, y]); }
    if (x === prevX) { y--; ops.push(['+', y]); } else { x--; ops.push(['-', x]); }
  }
  while (x > 0 && y > 0) { x--; y--; ops.push(['=', x, y]); }
  return ops.reverse();
}

function range(start, len) {
  // git: a range of length 0 starts at the line before it; length 1 is written without ",1"
  if (len === 0) return `${start - 1},0`;
  return len === 1 ? `${start}` : `${start},${len}`;
}

// Hunks in unified format for old -> new text (either may be null: a created/deleted file).
function hunks(oldText, newText) {
  const o = splitLines(oldText === null ? '' : oldText);
  const n = splitLines(newText === null ? '' : newText);
  // A last line without '\n' differs from the same line with one.
  const key = (s, i, t) => (t.noFinalNewline && i === t.lines.length - 1 ? s + '\0' : s);
  const ops = diffLines(o.lines.map((s, i) => key(s, i, o)), n.lines.map((s, i) => key(s, i, n)));
  const changes = [];
  ops.forEach((op, idx) => { if (op[0] !== '=') changes.push(idx); });
  if (changes.length === 0) return '';
  // Group change positions whose context would touch.
  const groups = [];
  let start = changes[0];
  let end = changes[0];
  for (const c of changes.slice(1)) {
    if (c - end - 1 <= 2 * CONTEXT) end = c;
    else { groups.push([start, end]); start = c; end = c; }
  }
  groups.push([start, end]);
  let out = '';
  const noNl = '\n\\ No newline at end of file';
  for (const [gs, ge] of groups) {
    const from = Math.max(0, gs - CONTEXT);
    const to = Math.min(ops.length - 1, ge + CONTEXT);
    let body = '';
    let oldLen = 0;
    let newLen = 0;
    let oldStart = null;
    let newStart = null;
    // 1-based line numbers of the first old/new line the hunk covers
    const firstOld = () => {
      for (let i = from; i < ops.length; i++) if (ops[i][0] !== '+') return ops[i][1] + 1;
      return o.lines.length + 1;
    };
    const firstNew = () => {
      for (let i = from; i < ops.length; i++) {
        if (ops[i][0] === '=') return ops[i][2] + 1;
        if (ops[i][0] === '+') return ops[i][1] + 1;
      }
      return n.lines.length + 1;
    };
    oldStart = firstOld();
    newStart = firstNew();
    for (let i = from; i <= to; i++) {
      const op = ops[i];
      if (op[0] === '=') {
        body += ' ' + o.lines[op[1]];
        if (o.noFinalNewline && op[1] === o.lines.length - 1) body += noNl;
        oldLen++; newLen++;
      } else if (op[0] === '-') {
        body += '-' + o.lines[op[1]];
        if (o.noFinalNewline && op[1] === o.lines.length - 1) body += noNl;
        oldLen++;
      } else {
        body += '+' + n.lines[op[1]];
        if (n.noFinalNewline && op[1] === n.lines.length - 1) body += noNl;
        newLen++;
      }
      body += '\n';
    }
    if (oldLen === 0) oldStart = Math.max(oldStart, 1);
    if (newLen === 0) newStart = Math.max(newStart, 1);
    out += `@@ -${range(oldStart, oldLen)} +${range(newStart, newLen)} @@\n` + body;
  }
  return out;
}

// One file's part of a patch. path: relative to the app (node_modules/NAME/...); oldText
// null for a new file, newText null for a deleted one. Empty when nothing changes.
function filePatch(path, oldText, newText) {
  if (oldText === newText) return '';
  let head = `diff --git a/${path} b/${path}\n`;
  if (oldText === null) {
    head += `new file mode 100644\nindex ${blobId(null)}..${blobId(newText)}\n`;
    head += `--- /dev/null\n+++ b/${path}\n`;
  } else if (newText === null) {
    head += `deleted file mode 100644\nindex ${blobId(oldText)}..${blobId(null)}\n`;
    head += `--- a/${path}\n+++ /dev/null\n`;
  } else {
    head += `index ${blobId(oldText)}..${blobId(newText)} 100644\n`;
    head += `--- a/${path}\n+++ b/${path}\n`;
  }
  return head + hunks(oldText, newText);
}

// A whole patch file: changes = [{path, oldText, newText}], in git's order (by path).
function patchFile(changes) {
  return [...changes]
    .sort((x, y) => (x.path < y.path ? -1 : x.path > y.path ? 1 : 0))
    .map((c) => filePatch(c.path, c.oldText, c.newText))
    .join('');
}

// Reads back the old text of a file this module deleted in `patch` (the '-' lines of its
// one hunk), or null if the patch does not delete it.
function deletedText(patch, path) {
  const lines = patch.split('\n');
  const start = lines.indexOf(`diff --git a/${path} b/${path}`);
  if (start < 0 || lines[start + 1] !== 'deleted file mode 100644') return null;
  let i = start + 2;
  while (i < lines.length && !lines[i].startsWith('@@')) i++;
  const m = /^@@ -1(?:,(\d+))? \+0,0 @@$/.exec(lines[i] || '');
  if (!m) return null;
  const count = m[1] === undefined ? 1 : Number(m[1]);
  const out = [];
  let noFinal = false;
  for (i++; out.length < count || lines[i] === '\\ No newline at end of file'; i++) {
    if (i >= lines.length) return null;
    if (lines[i] === '\\ No newline at end of file') { noFinal = true; break; }
    if (!lines[i].startsWith('-')) return null;
    out.push(lines[i].slice(1));
  }
  return out.join('\n') + (noFinal ? '' : '\n');
}

module.exports = { patchFile, filePatch, deletedText, diffLines, hunks };
