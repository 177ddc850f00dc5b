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

// galloc-ggml.h's functions as a package with `prefix` names them, declared for its own code.
const SHARE_FUNCTIONS = {
  begin: (g) => `bool ${g}_begin(const char * name)`,
  end: (g) => `bool ${g}_end(void)`,
  group: (g) => `const char * ${g}_group(void)`,
  generation: (g) => `unsigned long long ${g}_generation(const char * name)`,
};
function shareName(prefix) {
  return `galloc_${prefix ? `${prefix}_` : ''}ggml_share`;
}
function shareDeclarations(prefix, uses) {
  return uses.map((u) => `extern "C" ${SHARE_FUNCTIONS[u](shareName(prefix))};\n`).join('');
}

// whisper.cpp: whisper_init_state, defined in the file, becomes a static
// whisper_init_state_unshared; a wrapper with the public name, appended at the end, opens a
// share group for the state's schedulers (conv, encode, cross, decode).
const BLOCK_MARKER = '// galloc-rn: every whisper state in a share group of its own.';
const UNSHARED = 'static struct whisper_state * whisper_init_state_unshared(whisper_context * ctx) {';

const WHISPER_USES = ['begin', 'end'];

function shareBlock(prefix, toolVersion) {
  const g = shareName(prefix);
  return `
${BLOCK_MARKER} Written by galloc-rn ${toolVersion}
// (\`npx galloc-rn revert\` removes it). The state's four schedulers (conv, encode, cross,
// decode) run their graphs one after another, so their compute buffers can be one buffer per
// buffer type; each state (whisper_full_parallel's too) gets a group with a new name.
#include <atomic>
#include <cstdio>

${shareDeclarations(prefix, WHISPER_USES)}
struct whisper_state * whisper_init_state(whisper_context * ctx) {
    static std::atomic<unsigned long long> galloc_rn_states{0};
    char name[64];
    snprintf(name, sizeof(name), "whisper-state-%llu", galloc_rn_states.fetch_add(1) + 1);
    // false if a group is open on this thread already: the state then joins none of its own
    const bool began = ${g}_begin(name);
    struct whisper_state * state = whisper_init_state_unshared(ctx);
    if (began) {
        ${g}_end();
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

// llama.cpp's llama-context.cpp: a llama_context made while a share group is open on the
// thread stays in that group (rn-llama.cpp's edit below opens it, or an app's own code). Three
// changes follow the context through its life, each a line galloc-rn adds or a condition it
// extends:
//   - the constructor notes the group and the destructor forgets it;
//   - sched_reserve, which makes the scheduler again when a setting changes (at decode time,
//     on whichever thread decodes), opens the group again around it;
//   - graph reuse (process_ubatch computes the previous graph again without allocating it) only
//     while no other member of the group allocated since this context's last alloc.
const LLAMA_BEGIN = '// galloc-rn: a llama_context made in a share group stays in it.';
const LLAMA_END = '// galloc-rn: end of the share group helpers.';
const LLAMA_LINE_MARK = ' // galloc-rn';
// [the line after which a line goes, the line] and [in the one line holding it: old, new]
const LLAMA_INSERTS = [
  ['    LLAMA_LOG_INFO("%s: constructing llama_context\\n", __func__);', '    galloc_rn_join(this);'],
  ['llama_context::~llama_context() {', '    galloc_rn_leave(this);'],
  ['    sched_need_reserve = false;', '    const galloc_rn_reopen galloc_rn_group(this);'],
];
const LLAMA_CONDITIONS = [
  ['res->can_reuse(gparams)) {', 'res->can_reuse(gparams) && galloc_rn_in_place(this)) {'],
  ['_backend_sched_alloc_graph(sched.get(), gf)) {', '_backend_sched_alloc_graph(sched.get(), gf) || !galloc_rn_allocated(this)) {'],
];
const LLAMA_BEFORE = 'llama_context::llama_context(';
const LLAMA_USES = ['begin', 'end', 'group', 'generation'];

// text without the block from the line `begin` to the line `end` and the empty line after it
function removeBlock(text, begin, end) {
  const from = text.indexOf(begin);
  const to = text.indexOf(end);
  return from >= 0 && to > from ? text.slice(0, from) + text.slice(to + end.length + 2) : text;
}

function llamaBlock(prefix, toolVersion) {
  const g = shareName(prefix);
  return `${LLAMA_BEGIN} Written by galloc-rn
// ${toolVersion} (\`npx galloc-rn revert\` removes it). The context notes the group open on the
// thread when it is made, opens it again when it makes its scheduler again, and computes a graph
// again without allocating it only while no other member of the group has allocated since: the
// other member may have taken that memory over (galloc-ggml.h).
#include <map>
#include <mutex>
#include <string>

${shareDeclarations(prefix, LLAMA_USES)}
namespace {

struct galloc_rn_member {
    std::string group;
    unsigned long long generation = 0; // the group's, right after the context's last alloc
};

std::mutex galloc_rn_mutex;
std::map<const llama_context *, galloc_rn_member> galloc_rn_members; // contexts made in a group

void galloc_rn_join(const llama_context * ctx) {
    const char * group = ${g}_group();
    std::lock_guard<std::mutex> lock(galloc_rn_mutex);
    if (group != nullptr) {
        galloc_rn_members[ctx] = { group, 0 };
    } else {
        galloc_rn_members.erase(ctx);
    }
}

void galloc_rn_leave(const llama_context * ctx) {
    std::lock_guard<std::mutex> lock(galloc_rn_mutex);
    galloc_rn_members.erase(ctx);
}

// Opens the context's group while sched_reserve makes and reserves its scheduler. Open already
// when the context is being made inside it; another group open on the thread (a context being
// made elsewhere decodes this one) is set aside meanwhile.
struct galloc_rn_reopen {
    bool began = false;
    std::string outer;
    explicit galloc_rn_reopen(const llama_context * ctx) {
        std::string group;
        {
            std::lock_guard<std::mutex> lock(galloc_rn_mutex);
            auto it = galloc_rn_members.find(ctx);
            if (it != galloc_rn_members.end()) {
                group = it->second.group;
            }
        }
        const char * open = ${g}_group();
        if (group.empty() || (open != nullptr && group == open)) {
            return;
        }
        if (open != nullptr) {
            outer = open;
            ${g}_end();
        }
        began = ${g}_begin(group.c_str());
    }
    ~galloc_rn_reopen() {
        if (began) {
            ${g}_end();
        }
        if (!outer.empty()) {
            ${g}_begin(outer.c_str());
        }
    }
    galloc_rn_reopen(const galloc_rn_reopen &) = delete;
    galloc_rn_reopen & operator=(const galloc_rn_reopen &) = delete;
};

// After the context's alloc: the group's generation, to compare at the next reuse.
bool galloc_rn_allocated(const llama_context * ctx) {
    std::lock_guard<std::mutex> lock(galloc_rn_mutex);
    auto it = galloc_rn_members.find(ctx);
    if (it != galloc_rn_members.end()) {
        it->second.generation = ${g}_generation(it->second.group.c_str());
    }
    return true;
}

// Whether the context's last alloc is still in place: no other member allocated since.
bool galloc_rn_in_place(const llama_context * ctx) {
    std::lock_guard<std::mutex> lock(galloc_rn_mutex);
    auto it = galloc_rn_members.find(ctx);
    return it == galloc_rn_members.end() || ${g}_generation(it->second.group.c_str()) == it->second.generation;
}

} // namespace
${LLAMA_END}

`;
}

// Replaces `from` with `to` in the one line that holds `from`; null unless exactly one does.
function replaceInLine(text, from, to) {
  const lines = text.split('\n');
  const at = [];
  lines.forEach((l, i) => { if (l.includes(from)) at.push(i); });
  if (at.length !== 1) return null;
  lines[at[0]] = lines[at[0]].replace(from, to);
  return lines.join('\n');
}

// llama-context.cpp with the share group helpers; null if it is not laid out as expected.
function shareLlamaContext(text, prefix, toolVersion) {
  let out = text;
  for (const [after, line] of LLAMA_INSERTS) {
    out = out === null ? null : replaceLine(out, after, `${after}\n${line}${LLAMA_LINE_MARK}`);
  }
  for (const [from, to] of LLAMA_CONDITIONS) {
    out = out === null ? null : replaceInLine(out, from, to);
  }
  if (out === null) return null;
  return replaceLine(out, LLAMA_BEFORE, `${llamaBlock(prefix, toolVersion)}${LLAMA_BEFORE}`);
}

// The inverse of shareLlamaContext (unchecked, as unshareWhisper).
function unshareLlamaContext(text) {
  let out = removeBlock(text, LLAMA_BEGIN, LLAMA_END);
  out = out.split('\n').filter((l) => !l.endsWith(LLAMA_LINE_MARK)).join('\n');
  for (const [from, to] of LLAMA_CONDITIONS) out = replaceInLine(out, to, from) ?? out;
  return out;
}

// llama.rn's rn-llama.cpp: the target model's context (loadModel), the MTP draft's
// (createMTPDraftContext, made again for every completion) and mtmd's encoder (initMultimodal)
// are made inside one share group per llama.rn context, named after its address. They compute
// one after another on the completion's thread, and llama-context.cpp's edit keeps each llama
// context in its group. The vocoder stays out (docs/llama-rn-sharing.md says why).
const RN_BEGIN = '// galloc-rn: a llama.rn context\'s llama.cpp contexts in one share group.';
const RN_END = '// galloc-rn: end of the share group helper.';
const RN_BEFORE = 'namespace rnllama {';
const RN_USES = ['begin', 'end', 'group'];
const RN_CALLS = [
  ['    llama_init = common_init_from_params(params);',
    '    llama_init = galloc_rn_in_context_group(this, [&] { return common_init_from_params(params); });'],
  ['    return llama_init_from_model(model_dft, cparams);',
    '    return galloc_rn_in_context_group(this, [&] { return llama_init_from_model(model_dft, cparams); });'],
  ['        mtmd_wrapper = new llama_rn_context_mtmd(mmproj_path, use_gpu, model, ctx, params, has_multimodal, params, image_min_tokens, image_max_tokens);',
    '        mtmd_wrapper = galloc_rn_in_context_group(this, [&] { return new llama_rn_context_mtmd(mmproj_path, use_gpu, model, ctx, params, has_multimodal, params, image_min_tokens, image_max_tokens); });'],
];

function rnBlock(prefix, toolVersion) {
  const g = shareName(prefix);
  return `${RN_BEGIN} Written by galloc-rn
// ${toolVersion} (\`npx galloc-rn revert\` removes it). The target's context, the MTP draft's
// and mtmd's encoder compute one after another, so they can hold one compute buffer
// (galloc-ggml.h); the edit to llama-context.cpp keeps each llama context in its group when
// llama.cpp makes its scheduler again.
#include <cstdio>

${shareDeclarations(prefix, RN_USES)}
namespace {

// make(), inside the share group of the llama.rn context at rn_context, unless a group is open
// on the thread already.
template <typename Make>
auto galloc_rn_in_context_group(const void * rn_context, Make make) -> decltype(make()) {
    char name[48];
    snprintf(name, sizeof(name), "llama.rn-context-%p", rn_context);
    struct group_scope {
        bool began;
        ~group_scope() {
            if (began) {
                ${g}_end();
            }
        }
    } scope{ ${g}_group() == nullptr && ${g}_begin(name) };
    return make();
}

} // namespace
${RN_END}

`;
}

// rn-llama.cpp with the helper and the three calls in the group; null if not laid out as expected.
function shareRnLlama(text, prefix, toolVersion) {
  let out = text;
  for (const [from, to] of RN_CALLS) out = out === null ? null : replaceLine(out, from, to);
  return out === null ? null : replaceLine(out, RN_BEFORE, `${rnBlock(prefix, toolVersion)}${RN_BEFORE}`);
}

// The inverse of shareRnLlama (unchecked, as unshareWhisper).
function unshareRnLlama(text) {
  let out = removeBlock(text, RN_BEGIN, RN_END);
  for (const [from, to] of RN_CALLS) out = replaceLine(out, to, from) ?? out;
  return out;
}

// llama.rn's rn-mtmd.hpp: before each chunk of a prompt with media, the target's device work is
// waited for. mtmd encodes an image right after the target decoded the text before it, and on
// Metal that decode may still be running when the encoder's alloc takes the group's memory.
// On the CPU the wait returns at once.
const MTMD_EVAL = '            int32_t res = mtmd_helper_eval_chunk_single(';
const MTMD_SYNC = '            llama_synchronize(ctx); // galloc-rn: the target done before mtmd takes the group\'s memory';

// rn-mtmd.hpp with the wait; null if not laid out as expected.
function shareRnMtmd(text) {
  return replaceLine(text, MTMD_EVAL, `${MTMD_SYNC}\n${MTMD_EVAL}`);
}

// The inverse of shareRnMtmd (unchecked, as unshareWhisper).
function unshareRnMtmd(text) {
  return text.split(`${MTMD_SYNC}\n`).join('');
}

// The share groups galloc-rn opens in a package's own code (versions.js: shareEdits' kinds).
const WHISPER_INIT_STATE = 'struct whisper_state * whisper_init_state(whisper_context * ctx) {';
const SHARE_EDITS = {
  'whisper-state': {
    share: (text, prefix, toolVersion) => shareWhisper(text, WHISPER_INIT_STATE, prefix, toolVersion),
    unshare: (text) => unshareWhisper(text, WHISPER_INIT_STATE),
    says: 'each whisper state in a share group of its own',
    mode: 'a share group per whisper state',
    uses: WHISPER_USES,
  },
  'llama-context': {
    share: shareLlamaContext,
    unshare: unshareLlamaContext,
    says: 'a llama_context made in a share group stays in it (its scheduler made again, graph reuse)',
    mode: 'llama_contexts stay in the share group they were made in',
    uses: LLAMA_USES,
  },
  'llama-rn-context': {
    share: shareRnLlama,
    unshare: unshareRnLlama,
    says: 'the target\'s context, the MTP draft\'s and mtmd\'s encoder in one share group per llama.rn context',
    mode: 'one share group per llama.rn context (target, MTP draft, mtmd encoder)',
    uses: RN_USES,
  },
  'llama-rn-mtmd': {
    share: shareRnMtmd,
    unshare: unshareRnMtmd,
    says: 'the target\'s device work waited for before mtmd encodes',
    mode: 'mtmd waits for the target',
    uses: [],
  },
};

module.exports = {
  renameRules, detectPrefix, galloccpp, readHeader, replaceLine, cppLine, shareName, SHARE_EDITS,
};
