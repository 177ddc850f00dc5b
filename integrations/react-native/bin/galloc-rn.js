#!/usr/bin/env node
'use strict';
// galloc-rn: puts galloc's ggml-alloc.cpp into the React Native packages whisper.rn, llama.rn
// and cui-llama.rn of an app, and into nodejs-whisper. Argument parsing and exit codes; the work is in ../lib.
//   exit 0: done / check passed; 1: a package refused or failed, check failed; 2: usage

const path = require('node:path');
const { UserError } = require('../lib/errors');

const USAGE = `usage: galloc-rn COMMAND [--app DIR]

Puts galloc's ggml-alloc.cpp into whisper.rn, llama.rn, cui-llama.rn and nodejs-whisper in
node_modules.

commands:
  apply [--no-share]  replace ggml-alloc.c in each supported package, write patches/ for
                      patch-package and the postinstall that runs it; --no-share: no
                      allocators share a compute buffer (default: each whisper state shares one)
  check               exit 0 only when every installed package carries this version's change
  revert              undo everything apply did

options:
  --app DIR           the app's root (default: the current directory)
  -h, --help          this text
  -v, --version       galloc-rn's version`;

function usageError(message) {
  process.stderr.write(`galloc-rn: ${message}\n${USAGE}\n`);
  return 2;
}

function main(argv) {
  let command = null;
  let appDir = process.cwd();
  let share = true;
  let noShareGiven = false;
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '-h' || a === '--help') { process.stdout.write(USAGE + '\n'); return 0; }
    if (a === '-v' || a === '--version') { process.stdout.write(require('../package.json').version + '\n'); return 0; }
    if (a === '--app') {
      if (i + 1 >= argv.length) return usageError('--app needs a folder');
      appDir = argv[++i];
    } else if (a.startsWith('--app=')) appDir = a.slice('--app='.length);
    else if (a === '--no-share') { share = false; noShareGiven = true; }
    else if (a.startsWith('-')) return usageError(`unknown option ${a}`);
    else if (command === null) command = a;
    else return usageError(`unexpected argument ${a}`);
  }
  if (command === null) return usageError('no command');
  if (!['apply', 'check', 'revert'].includes(command)) return usageError(`unknown command ${command}`);
  if (noShareGiven && command !== 'apply') return usageError('--no-share goes with apply only');
  appDir = path.resolve(appDir);
  const say = (line) => process.stdout.write(line + '\n');
  try {
    if (command === 'apply') return require('../lib/apply').apply(appDir, { share }, say);
    if (command === 'check') return require('../lib/check').check(appDir, say);
    return require('../lib/revert').revert(appDir, say);
  } catch (e) {
    if (!(e instanceof UserError)) throw e;
    process.stderr.write(`galloc-rn: ${e.message}\n`);
    return 1;
  }
}

// A closed pipe (galloc-rn apply | head) is no error of galloc-rn's.
process.stdout.on('error', (e) => { if (e.code !== 'EPIPE') throw e; });
process.exitCode = main(process.argv.slice(2));
