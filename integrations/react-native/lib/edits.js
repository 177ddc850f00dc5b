'use strict';
// The edits galloc-rn makes to a package's files, computed in memory, and their inverses
// (to find a package's pristine files again from an applied tree).

const HEADER_RE = /^\/\/ galloc-rn (\S+) wrote this file for (\S+)@(\S+) in place of ggml-alloc\.c; /;
const SHARE_RE = /^#define GALLOC_SHARE_DEFAULT "(groups|0)"$/;

// The package's own renaming of ggml's symbols, as its bootstrap script runs sed over ggml's
// files (integrations/ggml/package.sh, package_rename): GGML_, ggml_, GGUF_, gguf_ get the
// prefix anywhere (no word boundaries); where the package's ggml-quants.h shows the double
// prefix (wsp_dewsp_quantize_), dequantize_ and quantize_ too. The rules run one after the
// other over the whole text, as sed's -e expressions do on each line.
function renameRules(prefix, quantsHeader) {
  if (!prefix) return [];
  const up = prefix.toUpperCase();
  const rules = [
    ['GGML_', `${up}_GGML_`],
    ['ggml_', `${prefix}_ggml_`],
    ['GGUF_', `${up}_GGUF_`],
    ['gguf_', `${prefix}_gguf_`],
  ];
  if (quantsHeader !== null && quantsHeader.includes(`${prefix}_de${prefix}_quantize_`)) {
    rules.push(['dequantize_', `${prefix}_dequantize_`], ['quantize_', `${prefix}_quantize_`]);
  }
  return rules;
}

function rename(text, rules) {
  let out = text;
  for (const [from, to] of rules) out = out.split(from).join(to);
  return out;
}

// The prefix a package's ggml.h gives ggml's names ('' when none), as package.sh's
// detect_prefix finds it.
function detectPrefix(ggmlHeader) {
  const m = /\b([A-Za-z0-9]+)_ggml_init\b/.exec(ggmlHeader);
  return m ? m[1] : '';
}

// The file that replaces ggml-alloc.c: the one file renamed, with two lines in front.
function galloccpp({ oneFile, rules, toolVersion, name, version, share }) {
  return (
    `// galloc-rn ${toolVersion} wrote this file for ${name}@${version} in place of ggml-alloc.c; ` +
    '`npx galloc-rn revert` undoes it.\n' +
    `#define GALLOC_SHARE_DEFAULT "${share ? 'groups' : '0'}"\n` +
    rename(oneFile, rules)
  );
}

// What the first two lines of an ggml-alloc.cpp say, or null if galloc-rn did not write it.
function readHeader(text) {
  const nl = text.indexOf('\n');
  const nl2 = text.indexOf('\n', nl + 1);
  if (nl < 0 || nl2 < 0) return null;
  const m = HEADER_RE.exec(text.slice(0, nl));
  const s = SHARE_RE.exec(text.slice(nl + 1, nl2));
  if (!m || !s) return null;
  return { toolVersion: m[1], name: m[2], version: m[3], share: s[1] === 'groups' };
}

// Replaces the one line `from` (a whole line) with `to`; null if it is not there exactly once.
function replaceLine(text, from, to) {
  const lines = text.split('\n');
  const at = [];
  lines.forEach((l, i) => { if (l === from) at.push(i); });
  if (at.length !== 1) return null;
  lines[at[0]] = to;
  return lines.join('\n');
}

function cppLine(line) {
  return line.replace(/ggml-alloc\.c$/, 'ggml-alloc.cpp');
}

// whisper.cpp: whisper_init_state, defined in the file, becomes a static
// whisper_init_state_unshared; a wrapper with the public name, appended at the end, opens a
// share group for the state's schedulers (conv, encode, cross, decode).
const BLOCK_MARKER = '// galloc-rn: every whisper state in a share group of its own.';
const UNSHARED = 'static struct whisper_state * whisper_init_state_unshared(whisper_context * ctx) {';

function shareBlock(prefix, toolVersion) {
  const p = prefix ? `${prefix}_` : '';
  return `
${BLOCK_MARKER} Written by galloc-rn ${toolVersion}
// (\`npx galloc-rn revert\` removes it). The state's four schedulers (conv, encode, cross,
// decode) run their graphs one after another, so their compute buffers can be one buffer per
// buffer type; each state (whisper_full_parallel's too) gets a group with a new name.
#include <atomic>
#include <cstdio>

extern "C" bool galloc_${p}ggml_share_begin(const char * name);
extern "C" bool galloc_${p}ggml_share_end(void);

struct whisper_state * whisper_init_state(whisper_context * ctx) {
    static std::atomic<unsigned long long> galloc_rn_states{0};
    char name[64];
    snprintf(name, sizeof(name), "whisper-state-%llu", galloc_rn_states.fetch_add(1) + 1);
    // false if a group is open on this thread already: the state then joins none of its own
    const bool began = galloc_${p}ggml_share_begin(name);
    struct whisper_state * state = whisper_init_state_unshared(ctx);
    if (began) {
        galloc_${p}ggml_share_end();
    }
    return state;
}
`;
}

function shareWhisper(text, definition, prefix, toolVersion) {
  const renamed = replaceLine(text, definition, UNSHARED);
  if (renamed === null || !renamed.endsWith('\n')) return null;
  return renamed + shareBlock(prefix, toolVersion);
}

// The inverse: whisper.cpp as it was before shareWhisper (unchecked: the caller compares the
// result's sha256 with the pristine one).
function unshareWhisper(text, definition) {
  const at = text.lastIndexOf('\n\n' + BLOCK_MARKER);
  const body = at >= 0 ? text.slice(0, at + 1) : text;
  return replaceLine(body, UNSHARED, definition) ?? body;
}

module.exports = {
  renameRules, rename, detectPrefix, galloccpp, readHeader, replaceLine, cppLine,
  shareWhisper, unshareWhisper, BLOCK_MARKER,
};
