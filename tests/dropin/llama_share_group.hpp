// A llama_context made as llama.rn makes its target's and its MTP draft's after galloc-rn apply,
// for llama_share_client.cpp and bench/llama_share_bench.cpp: with `shared`, inside the share
// group that galloc-rn's helper opens. The helper is cut from the rn-llama.cpp galloc-rn wrote
// into the header that GALLOC_RN_LLAMA_GROUP names (tests/amalgamation/packages_test.sh); a build
// without it (stock) makes unshared contexts only.
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

// NULL where llama.cpp fails, or with `shared` in a build without the helper.
inline llama_context* make_llama_context(llama_model* model, const llama_context_params& params, bool shared) {
  if (!shared) return llama_init_from_model(model, params);
#ifdef GALLOC_RN_LLAMA_GROUP
  static const int rn_context = 0;  // stands for the llama.rn context, whose address names the group
  return galloc_rn_in_context_group(&rn_context, [&] { return llama_init_from_model(model, params); });
#else
  return nullptr;
#endif
}

}  // namespace galloc::dropin_test
