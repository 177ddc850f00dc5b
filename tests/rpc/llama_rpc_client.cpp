// llama.cpp (nodejs-whisper's examples/talk-llama) split by layer over two RPC servers, with a
// model of random weights at Qwen2.5-0.5B's dimensions written with the tree's gguf API. The
// client's scheduler holds three buffer types, server0, server1 and CPU, so ggml-alloc (stock
// or galloc) plans every server's compute memory here. Reports in compare.cmake's format: the
// logits of a 512-token prompt (one micro-batch) and of tokens generated one at a time, and the
// compute buffer sizes read from the scheduler (linked with
// -Wl,--wrap=ggml_backend_sched_get_buffer_size); and for with_rpc_servers.sh, which checks
// that each server allocated it, each server's compute buffer ("rpc_compute serverN BYTES").
//
// No buffer may be left in the client once the context and the model are freed.
//
// usage: llama_rpc_client write MODEL     writes the model
//        llama_rpc_client rpc MODEL       on the servers in $GALLOC_TEST_RPC_SERVERS
//                                         (HOST:PORT,HOST:PORT, as with_rpc_servers.sh sets it)
//        llama_rpc_client cpu MODEL       the same on the local CPU alone: the reference
//        llama_rpc_client refused MODEL   servers without room for the compute buffers
//        llama_rpc_client gone MODEL      server1 stops between two computes
//        llama_rpc_client gone_at_reserve MODEL   server1 stops before the context reserves
#include <signal.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <unordered_set>
#include <vector>

#include "ggml-backend.h"
#include "ggml-rpc.h"
#include "ggml.h"
#include "gguf.h"
#include "llama.h"
#include "llama_model.hpp"
#include "sched_buffer_sizes.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

// Qwen2.5-0.5B (its config.json), with tied embeddings as it ships
constexpr int kQwenVocab = 151936, kQwenEmbd = 896, kQwenHead = 14, kQwenHeadKv = 2, kQwenFf = 4864, kQwenLayers = 24;
constexpr int kPrompt = 512, kGenerated = 4;

void write_model(const std::string& path) {
  gguf_context* g = gguf_init_empty();
  gguf_set_val_str(g, "general.architecture", "qwen2");
  gguf_set_val_str(g, "general.name", "galloc-random-qwen2.5-0.5b");
  gguf_set_val_u32(g, "qwen2.context_length", 32768);
  gguf_set_val_u32(g, "qwen2.embedding_length", kQwenEmbd);
  gguf_set_val_u32(g, "qwen2.block_count", kQwenLayers);
  gguf_set_val_u32(g, "qwen2.feed_forward_length", kQwenFf);
  gguf_set_val_u32(g, "qwen2.attention.head_count", kQwenHead);
  gguf_set_val_u32(g, "qwen2.attention.head_count_kv", kQwenHeadKv);
  gguf_set_val_f32(g, "qwen2.attention.layer_norm_rms_epsilon", 1e-6f);
  gguf_set_val_f32(g, "qwen2.rope.freq_base", 1000000.0f);
  gguf_set_val_u32(g, "qwen2.vocab_size", kQwenVocab);
  gguf_set_val_str(g, "tokenizer.ggml.model", "no_vocab");  // token ids go in directly

  const int kv_dim = kQwenEmbd / kQwenHead * kQwenHeadKv;
  ggml_init_params params{};
  params.mem_size = std::size_t{1100} << 20;  // 494M weights, most in f16, and their headers
  params.no_alloc = false;
  ggml_context* ctx = ggml_init(params);
  if (ctx == nullptr) fail("ggml_init for the model's weights");
  Rng rng(7);
  // vectors (norms, biases) are f32 near 1 or 0; matrices f16 at about 1/sqrt(fan-in)
  auto add = [&](const std::string& name, std::int64_t ne0, std::int64_t ne1, float scale, float mean) {
    ggml_tensor* t =
        ne1 == 0 ? ggml_new_tensor_1d(ctx, GGML_TYPE_F32, ne0) : ggml_new_tensor_2d(ctx, GGML_TYPE_F16, ne0, ne1);
    ggml_set_name(t, name.c_str());
    const std::int64_t n = ggml_nelements(t);
    if (ne1 == 0) {
      auto* f = static_cast<float*>(t->data);
      for (std::int64_t i = 0; i < n; ++i) f[i] = mean + rng.uniform(scale);
    } else {
      auto* h = static_cast<ggml_fp16_t*>(t->data);
      for (std::int64_t i = 0; i < n; ++i) h[i] = ggml_fp32_to_fp16(rng.uniform(scale));
    }
    gguf_add_tensor(g, t);
  };
  add("token_embd.weight", kQwenEmbd, kQwenVocab, 0.5f, 0);
  for (int l = 0; l < kQwenLayers; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    add(b + "attn_norm.weight", kQwenEmbd, 0, 0.1f, 1);
    add(b + "attn_q.weight", kQwenEmbd, kQwenEmbd, 0.05f, 0);
    add(b + "attn_q.bias", kQwenEmbd, 0, 0.1f, 0);
    add(b + "attn_k.weight", kQwenEmbd, kv_dim, 0.05f, 0);
    add(b + "attn_k.bias", kv_dim, 0, 0.1f, 0);
    add(b + "attn_v.weight", kQwenEmbd, kv_dim, 0.05f, 0);
    add(b + "attn_v.bias", kv_dim, 0, 0.1f, 0);
    add(b + "attn_output.weight", kQwenEmbd, kQwenEmbd, 0.05f, 0);
    add(b + "ffn_norm.weight", kQwenEmbd, 0, 0.1f, 1);
    add(b + "ffn_gate.weight", kQwenEmbd, kQwenFf, 0.05f, 0);
    add(b + "ffn_up.weight", kQwenEmbd, kQwenFf, 0.05f, 0);
    add(b + "ffn_down.weight", kQwenFf, kQwenEmbd, 0.02f, 0);
  }
  add("output_norm.weight", kQwenEmbd, 0, 0.1f, 1);
  if (!gguf_write_to_file(g, path.c_str(), false)) fail("cannot write " + path);
  gguf_free(g);
  ggml_free(ctx);
}

// A backend's name with each server's endpoint replaced by its place in the list, so that
// runs on other ports report the same keys: RPC0[127.0.0.1:40123] -> RPC0[server1].
std::string key_of(std::string name, const std::vector<std::string>& endpoints) {
  for (std::size_t i = 0; i < endpoints.size(); ++i) {
    const std::size_t at = name.find(endpoints[i]);
    if (at != std::string::npos) name.replace(at, endpoints[i].size(), "server" + std::to_string(i));
  }
  return name;
}

// The compute sizes read from the scheduler, by key_of (so in the same order in every run)
std::map<std::string, std::size_t> sizes_by_key(const std::vector<std::string>& endpoints) {
  std::map<std::string, std::size_t> out;
  for (const auto& [backend, size] : compute_sizes()) out[key_of(backend, endpoints)] = size;
  return out;
}

// The comma-separated items of `list` (endpoints, process ids)
std::vector<std::string> split_list(const char* list) {
  std::vector<std::string> out;
  std::string rest = list;
  for (std::size_t comma; (comma = rest.find(',')) != std::string::npos; rest.erase(0, comma + 1))
    out.push_back(rest.substr(0, comma));
  if (!rest.empty()) out.push_back(rest);
  return out;
}

// The buffers the client holds (linked with -Wl,--wrap= for ggml_backend_buft_alloc_buffer and
// ggml_backend_buffer_free): none may be left once the context and the model are freed.
std::unordered_set<ggml_backend_buffer_t>& client_buffers() {
  static std::unordered_set<ggml_backend_buffer_t> live;
  return live;
}

llama_model* load_model(const std::string& path, bool over_rpc, std::vector<std::string>& endpoints) {
  llama_model_params mp = llama_model_default_params();
  mp.progress_callback = [](float, void*) { return true; };  // no progress dots
  static std::vector<ggml_backend_dev_t> devices;
  if (over_rpc) {
    const char* list = std::getenv("GALLOC_TEST_RPC_SERVERS");
    if (list == nullptr) fail("GALLOC_TEST_RPC_SERVERS is not set; run through with_rpc_servers.sh");
    endpoints = split_list(list);
    for (const std::string& endpoint : endpoints) {
      ggml_backend_reg_t reg = ggml_backend_rpc_add_server(endpoint.c_str());
      if (reg == nullptr || ggml_backend_reg_dev_count(reg) == 0) fail("no RPC device at " + endpoint);
      devices.push_back(ggml_backend_reg_dev_get(reg, 0));
    }
    devices.push_back(nullptr);
    mp.devices = devices.data();
    mp.split_mode = LLAMA_SPLIT_MODE_LAYER;
    mp.n_gpu_layers = 999;  // every layer and the output on the servers
  } else {
    mp.n_gpu_layers = 0;
  }
  llama_model* model = llama_model_load_from_file(path.c_str(), mp);
  if (model == nullptr) fail("cannot load " + path);
  return model;
}

llama_context_params context_params(int ubatch, int n_ctx) {
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = static_cast<std::uint32_t>(n_ctx);
  cp.n_batch = static_cast<std::uint32_t>(ubatch);
  cp.n_ubatch = static_cast<std::uint32_t>(ubatch);
  cp.n_seq_max = 1;
  cp.n_threads = 2;
  cp.n_threads_batch = 2;
  cp.no_perf = true;
  return cp;
}

std::vector<llama_token> prompt_tokens(int n) {
  Rng rng(11);
  std::vector<llama_token> prompt;
  for (int i = 0; i < n; ++i) prompt.push_back(static_cast<llama_token>(rng.below(kQwenVocab)));
  return prompt;
}

// A context with micro-batches of `ubatch` tokens: a prompt of that many, then `generated`
// tokens one at a time; reports the logits and the compute buffer sizes under `label`.
void run(llama_model* model, const std::string& label, const std::vector<std::string>& endpoints, int ubatch, int n_ctx,
         int generated) {
  compute_sizes().clear();
  llama_context* ctx = llama_init_from_model(model, context_params(ubatch, n_ctx));
  if (ctx == nullptr) fail("llama_init_from_model");
  // The CPU-only reference has one buffer type; its sizes are not compared with the split's.
  for (const auto& [key, size] : sizes_by_key(endpoints))
    std::printf("size llama_rpc.%s.compute.%s %zu\n", label.c_str(), key.c_str(), size);
  llama_batch batch = llama_batch_init(ubatch, 0, 1);
  int n_past = 0;
  const float* logits = decode_tokens(ctx, batch, prompt_tokens(ubatch), n_past, "prompt", kQwenVocab);
  std::printf("exact llama_rpc.prompt%d.logits %s\n", ubatch, hex(fnv1a(logits, kQwenVocab * sizeof(float))).c_str());
  for (int i = 0; i < generated; ++i) {
    const std::string step = "gen" + std::to_string(i);
    logits = decode_tokens(ctx, batch, {argmax(logits, kQwenVocab)}, n_past, step, kQwenVocab);
    std::printf("exact llama_rpc.%s.logits %s\n", step.c_str(), hex(fnv1a(logits, kQwenVocab * sizeof(float))).c_str());
  }
  for (const auto& [key, size] : sizes_by_key(endpoints)) {
    std::printf("size llama_rpc.%s.final.%s %zu\n", label.c_str(), key.c_str(), size);
    for (std::size_t i = 0; i < endpoints.size(); ++i) {
      if (key == "RPC0[server" + std::to_string(i) + "]") std::printf("rpc_compute server%zu %zu\n", i, size);
    }
  }
  llama_batch_free(batch);
  llama_free(ctx);
}

// Stops server `index` of $GALLOC_TEST_RPC_SERVER_PIDS (SIGKILL) and waits until it is gone, so
// that its sockets are closed.
void stop_server(std::size_t index) {
  const char* list = std::getenv("GALLOC_TEST_RPC_SERVER_PIDS");
  if (list == nullptr) fail("GALLOC_TEST_RPC_SERVER_PIDS is not set; run through with_rpc_servers.sh");
  const std::vector<std::string> pids = split_list(list);
  if (index >= pids.size()) fail("no server " + std::to_string(index));
  const pid_t pid = static_cast<pid_t>(std::stol(pids[index]));
  if (kill(pid, SIGKILL) != 0) fail("cannot stop server " + std::to_string(index));
  // gone, or a zombie (its files closed) until with_rpc_servers.sh reaps it
  for (int tries = 0; tries < 500; ++tries) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string pid_field, name, state;
    if (!(stat >> pid_field >> name >> state) || state == "Z") return;
    usleep(10000);
  }
  fail("server " + std::to_string(index) + " did not stop");
}

}  // namespace

extern "C" {
ggml_backend_buffer_t __real_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
void __real_ggml_backend_buffer_free(ggml_backend_buffer_t buffer);

ggml_backend_buffer_t __wrap_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
  ggml_backend_buffer_t buffer = __real_ggml_backend_buft_alloc_buffer(buft, size);
  if (buffer != nullptr) client_buffers().insert(buffer);
  return buffer;
}

void __wrap_ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
  client_buffers().erase(buffer);
  __real_ggml_backend_buffer_free(buffer);
}
}

int main(int argc, char** argv) {
  if (argc != 3) fail("usage: llama_rpc_client write|rpc|cpu|refused|gone|gone_at_reserve MODEL");
  const std::string mode = argv[1], path = argv[2];
  llama_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_ERROR) std::fputs(text, stderr);
      },
      nullptr);
  llama_backend_init();
  // as programs that talk over sockets do: a write to a server that stopped then fails with
  // EPIPE instead of killing the process
  signal(SIGPIPE, SIG_IGN);
  if (mode == "write") {
    write_model(path);
    std::printf("done\n");
    return 0;
  }

  const bool over_rpc = mode != "cpu";
  std::vector<std::string> endpoints;
  llama_model* model = load_model(path, over_rpc, endpoints);
  if (mode == "rpc" || mode == "cpu") {
    run(model, mode, endpoints, kPrompt, 1024, kGenerated);
  } else if (mode == "refused") {
    // The servers cannot hold a 512-token micro-batch's compute buffer (with_rpc_servers.sh
    // --max-held): the context fails as ggml's scheduler reports it, and a smaller one works.
    llama_context_params cp = context_params(kPrompt, 1024);
    if (llama_context* ctx = llama_init_from_model(model, cp)) {
      llama_free(ctx);
      fail("a context the servers have no room for was created");
    }
    std::printf("info llama_rpc.refused.large_context refused\n");
    run(model, "refused.small", endpoints, 32, 256, 2);
  } else if (mode == "gone" || mode == "gone_at_reserve") {
    // A server stops, before the context reserves its compute buffers or between two
    // computes. Each step says how it went: rpc_test.sh checks what ggml-rpc does.
    if (mode == "gone_at_reserve") stop_server(1);
    llama_context* ctx = llama_init_from_model(model, context_params(kPrompt, 1024));
    std::printf("step context %s\n", ctx != nullptr ? "created" : "failed");
    std::fflush(stdout);
    if (ctx != nullptr) {
      llama_batch batch = llama_batch_init(kPrompt, 0, 1);
      if (mode == "gone") {
        int n_past = 0;
        decode_tokens(ctx, batch, prompt_tokens(kPrompt), n_past, "prompt", kQwenVocab);
        std::printf("step prompt decoded\n");
        std::fflush(stdout);
        stop_server(1);
      }
      fill_batch(batch, {1, 2, 3}, mode == "gone" ? kPrompt : 0);
      std::printf("step decode %s\n", llama_decode(ctx, batch) == 0 ? "returned 0" : "failed");
      std::fflush(stdout);
      llama_batch_free(batch);
      llama_free(ctx);
      std::printf("step context freed\n");
      std::fflush(stdout);
    }
  } else {
    fail("unknown mode " + mode);
  }
  llama_model_free(model);
  if (!client_buffers().empty())
    fail(std::to_string(client_buffers().size()) + " buffers left after llama_free and llama_model_free");
  llama_backend_free();
  std::printf("done\n");
  return 0;
}
