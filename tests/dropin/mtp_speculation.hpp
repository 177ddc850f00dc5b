// Speculative decoding with an MTP draft, as llama.cpp's draft-mtp (common/speculative.cpp)
// runs it for llama.rn's completion, with greedy drafts:
//   - the target decodes the prompt, keeping every row's hidden state before the output norm
//     (llama_set_embeddings_nextn);
//   - the draft catches up: the same tokens, each with the target's hidden state of the token
//     before it;
//   - then, step by step: the draft proposes up to `draft_max` tokens, each fed its own last
//     hidden state; the target verifies them in one batch; the draft catches up on that batch;
//     the longest agreeing prefix is kept and both memories drop the rest (a hybrid target rolls
//     its recurrent state back: its context needs n_rs_seq >= draft_max).
// Target and draft alternate at every step, and everything one hands the other goes through
// host memory: the hidden states are copied out of the target's output buffer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "llama-ext.h"
#include "llama.h"
#include "llama_model.hpp"
#include "test_support.hpp"

namespace galloc::dropin_test {

class MtpSpeculation {
 public:
  // Told a hash of every output as it comes: the target's logits and hidden states, each
  // draft step's logits and hidden state, keyed by the step.
  using Record = std::function<void(const std::string& key, std::uint64_t hash)>;

  MtpSpeculation(llama_context* target, llama_context* draft, int n_batch, int draft_max, Record record)
      : target_(target),
        draft_(draft),
        n_batch_(n_batch),
        draft_max_(draft_max),
        n_embd_(llama_model_n_embd(llama_get_model(target))),
        n_vocab_(llama_vocab_n_tokens(llama_model_get_vocab(llama_get_model(target)))),
        record_(std::move(record)) {
    llama_set_embeddings_nextn(target_, true, /*masked=*/false);
    llama_set_embeddings_nextn(draft_, true, /*masked=*/true);
    draft_batch_.token = draft_tokens_.data();  // llama_batch_init gives tokens or embeddings
  }
  ~MtpSpeculation() {
    llama_batch_free(target_batch_);
    draft_batch_.token = nullptr;  // not llama_batch_init's to free
    llama_batch_free(draft_batch_);
  }
  MtpSpeculation(const MtpSpeculation&) = delete;
  MtpSpeculation& operator=(const MtpSpeculation&) = delete;

  // The prompt but its last token, which the first verify batch starts with, in batches of
  // n_batch.
  void read_prompt(const std::vector<llama_token>& prompt) {
    llama_memory_clear(llama_get_memory(target_), true);
    llama_memory_clear(llama_get_memory(draft_), true);
    n_past_ = 0;
    pending_h_.assign(static_cast<std::size_t>(n_embd_), 0.0f);
    const std::size_t head = prompt.size() - 1;
    for (std::size_t at = 0; at < head; at += static_cast<std::size_t>(n_batch_)) {
      const std::size_t end = std::min(head, at + static_cast<std::size_t>(n_batch_));
      const std::vector<llama_token> part(prompt.begin() + static_cast<std::ptrdiff_t>(at),
                                          prompt.begin() + static_cast<std::ptrdiff_t>(end));
      const std::string step = "prompt" + std::to_string(at);
      decode_target(part, /*all_logits=*/false, step);
      catch_up(part, step);
      n_past_ += static_cast<int>(part.size());
    }
    id_last_ = prompt.back();
  }

  // Drafts, verifies, keeps what agrees; returns how many drafted tokens were kept.
  int step(const std::string& step) {
    const std::vector<llama_token> drafts = draft_tokens(step);
    std::vector<llama_token> verify = {id_last_};
    verify.insert(verify.end(), drafts.begin(), drafts.end());
    decode_target(verify, /*all_logits=*/true, step + ".verify");
    // greedy acceptance: each drafted token while the target's choice agrees, then the target's
    std::vector<llama_token> accepted;
    for (std::size_t i = 0; i < verify.size(); ++i) {
      const llama_token choice = argmax(llama_get_logits_ith(target_, static_cast<int>(i)), n_vocab_);
      accepted.push_back(choice);
      if (i == drafts.size() || choice != drafts[i]) break;
    }
    catch_up(verify, step + ".verify");
    pending_h_ = verified_h_[accepted.size() - 1];
    n_past_ += static_cast<int>(accepted.size());
    id_last_ = accepted.back();
    for (llama_context* ctx : {target_, draft_}) {
      if (!llama_memory_seq_rm(llama_get_memory(ctx), 0, n_past_, -1)) fail(step + ": cannot drop rejected tokens");
    }
    return static_cast<int>(accepted.size()) - 1;
  }

  // Positions in the target's memory.
  [[nodiscard]] int n_past() const { return n_past_; }

 private:
  void check_finite(const float* data, std::size_t count, const std::string& step) const {
    for (std::size_t i = 0; i < count; ++i) {
      if (!std::isfinite(data[i])) fail(step + ": non-finite values");
    }
  }
  std::uint64_t hash(const float* data, std::size_t count, const std::string& step,
                     std::uint64_t seed = 0xcbf29ce484222325ull) const {
    check_finite(data, count, step);
    return fnv1a(data, count * sizeof(float), seed);
  }

  // The target's decode of `tokens` at n_past_; its hidden states kept as verified_h_.
  void decode_target(const std::vector<llama_token>& tokens, bool all_logits, const std::string& step) {
    fill_batch(target_batch_, tokens, n_past_);
    for (int i = 0; i < target_batch_.n_tokens; ++i)
      target_batch_.logits[i] = all_logits || i + 1 == target_batch_.n_tokens;
    if (llama_decode(target_, target_batch_) != 0) fail("llama_decode target " + step);
    const std::size_t rows = tokens.size(), embd = static_cast<std::size_t>(n_embd_);
    const float* hidden = llama_get_embeddings_nextn(target_);
    record_(step + ".target_hidden", hash(hidden, rows * embd, step));
    verified_h_.assign(rows, {});
    for (std::size_t i = 0; i < rows; ++i) verified_h_[i].assign(hidden + i * embd, hidden + (i + 1) * embd);
    const std::size_t outputs = all_logits ? rows : 1;
    const float* logits = llama_get_logits_ith(target_, all_logits ? 0 : -1);
    record_(step + ".target_logits", hash(logits, outputs * static_cast<std::size_t>(n_vocab_), step));
  }

  // The draft decodes what the target just did, each token with the hidden state of the one
  // before it (the first with the pending one); the last row's becomes pending.
  void catch_up(const std::vector<llama_token>& tokens, const std::string& step) {
    draft_batch_.n_tokens = 0;
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      add_to_draft_batch(tokens[i], n_past_ + static_cast<llama_pos>(i),
                         i == 0 ? pending_h_.data() : verified_h_[i - 1].data(), false);
    }
    if (llama_decode(draft_, draft_batch_) != 0) fail("llama_decode draft " + step + ".catch_up");
    pending_h_ = verified_h_.back();
  }

  // Up to draft_max_ tokens, each the draft's greedy choice after the last, fed its own hidden
  // state; the draft's memory forgets them after.
  std::vector<llama_token> draft_tokens(const std::string& step) {
    std::vector<llama_token> drafts;
    std::vector<float> hidden = pending_h_;
    llama_token token = id_last_;
    for (int i = 0; i < draft_max_; ++i) {
      draft_batch_.n_tokens = 0;
      add_to_draft_batch(token, n_past_ + i, hidden.data(), true);
      const std::string draft_step = step + ".draft" + std::to_string(i);
      if (llama_decode(draft_, draft_batch_) != 0) fail("llama_decode " + draft_step);
      const float* logits = llama_get_logits_ith(draft_, 0);
      const float* h = llama_get_embeddings_nextn_ith(draft_, 0);
      record_(draft_step, hash(h, static_cast<std::size_t>(n_embd_), draft_step,
                               hash(logits, static_cast<std::size_t>(n_vocab_), draft_step)));
      token = argmax(logits, n_vocab_);
      hidden.assign(h, h + n_embd_);
      drafts.push_back(token);
    }
    if (!llama_memory_seq_rm(llama_get_memory(draft_), 0, n_past_, -1)) fail(step + ": cannot drop the drafts");
    return drafts;
  }

  void add_to_draft_batch(llama_token token, llama_pos pos, const float* hidden, bool output) {
    const int i = draft_batch_.n_tokens++;
    if (i >= n_batch_) fail("the draft's batch is full");
    draft_batch_.token[i] = token;
    draft_batch_.pos[i] = pos;
    draft_batch_.n_seq_id[i] = 1;
    draft_batch_.seq_id[i][0] = 0;
    draft_batch_.logits[i] = output;
    const auto embd = static_cast<std::size_t>(n_embd_);
    std::memcpy(draft_batch_.embd + static_cast<std::size_t>(i) * embd, hidden, embd * sizeof(float));
  }

  llama_context* target_;
  llama_context* draft_;
  int n_batch_, draft_max_, n_embd_, n_vocab_;
  Record record_;
  llama_batch target_batch_ = llama_batch_init(n_batch_, 0, 1);
  llama_batch draft_batch_ = llama_batch_init(n_batch_, n_embd_, 1);
  std::vector<llama_token> draft_tokens_ = std::vector<llama_token>(static_cast<std::size_t>(n_batch_));
  std::vector<float> pending_h_;
  std::vector<std::vector<float>> verified_h_;
  int n_past_ = 0;
  llama_token id_last_ = 0;
};

}  // namespace galloc::dropin_test
