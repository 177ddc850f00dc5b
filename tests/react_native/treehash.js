'use strict';
// treehash.js DIR...: one sha256 over every entry under the folders: relative path, kind,
// permission bits, and the content (or link target). Equal hashes: byte-identical trees.
const fs = require('node:fs');
const path = require('node:path');
const crypto = require('node:crypto');

const h = crypto.createHash('sha256');
function walk(root, rel) {
  const full = path.join(root, rel);
  const st = fs.lstatSync(full);
  const mode = (st.mode & 0o777).toString(8);
  if (st.isSymbolicLink()) {
    h.update(`L ${rel} ${fs.readlinkSync(full)}\n`);
  } else if (st.isDirectory()) {
    h.update(`D ${rel} ${mode}\n`);
    for (const name of fs.readdirSync(full).sort()) walk(root, path.join(rel, name));
  } else {
    h.update(`F ${rel} ${mode} ${st.size}\n`);
    h.update(fs.readFileSync(full));
  }
}
for (const dir of process.argv.slice(2)) {
  if (fs.existsSync(dir)) walk(dir, '.');
  else h.update(`missing ${dir}\n`);
}
process.stdout.write(h.digest('hex') + '\n');
