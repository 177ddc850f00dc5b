'use strict';
// npm pack runs this first: writes galloc's one file (integrations/ggml/amalgamate.sh) to
// dist/ggml-alloc.cpp, through a temporary name, so that packs running at once never see a
// half-written file.

const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');

const pkgDir = path.join(__dirname, '..');
const script = path.join(pkgDir, '..', 'ggml', 'amalgamate.sh');
const dist = path.join(pkgDir, 'dist');
fs.mkdirSync(dist, { recursive: true });
const tmp = path.join(dist, `.ggml-alloc.cpp.${process.pid}.tmp`);
try {
  execFileSync(script, [tmp], { stdio: ['ignore', 'ignore', 'inherit'] });
  fs.renameSync(tmp, path.join(dist, 'ggml-alloc.cpp'));
} finally {
  fs.rmSync(tmp, { force: true });
}
