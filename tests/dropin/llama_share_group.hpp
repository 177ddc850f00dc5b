// A llama_context (or mtmd's encoder) made as llama.rn makes its target's, its MTP draft's and
// its multimodal encoder after galloc-rn apply, for the llama_*share_client.cpp tests and
// bench/llama_share_bench.cpp: with `shared`, inside the share group that galloc-rn's helper
// opens. The helper is cut from the rn-llama.cpp galloc-rn wrote into the header that
// GALLOC_RN_LLAMA_GROUP names (tests/amalgamation/packages_test.sh); a build without it (stock)
// makes unshared contexts only.
#pragma once

#include "llama.h"

#ifdef GALLOC_RN_LLAMA_GROUP
#include GALLOC_RN_LLAMA_GROUP
#endif

namespace galloc::dropin_test {

constexpr bool kHasShareGroups =
#ifdef GALLOC_RN_LLAMA_GROUP
    true;
#else
    false;
#endif

// One address for every member: it stands for the llama.rn context, whose address names the group.
inline const int kRnContext = 0;

// make(), inside the group of one llama.rn context when `shared`, as galloc-rn's helper opens
// it around loadModel, createMTPDraftContext and initMultimodal; what make() returns, or NULL
// with `shared` in a build without the helper.
template <typename Make>
auto in_rn_context_group(bool shared, Make make) -> decltype(make()) {
  if (!shared) return make();
#ifdef GALLOC_RN_LLAMA_GROUP
  return galloc_rn_in_context_group(&kRnContext, make);
#else
  return nullptr;
#endif
}

// NULL where llama.cpp fails, or with `shared` in a build without the helper.
inline llama_context* make_llama_context(llama_model* model, const llama_context_params& params, bool shared) {
  return in_rn_context_group(shared, [&] { return llama_init_from_model(model, params); });
}

}  // namespace galloc::dropin_test
