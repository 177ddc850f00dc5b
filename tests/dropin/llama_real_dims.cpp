// llama.cpp at the real dimensions of models people run, for capturing the graphs it reserves
// (bench/graphs/capture-llama.sh) and for reading its compute buffer next to stock's.
//
//   llama_real_dims MODEL N_CTX N_UBATCH attn|flash DIR [f16|q4_0]
//
// writes DIR/MODEL.gguf (DIR/MODEL.q4_0.gguf with q4_0) with gguf's API, unless it exists: the
// real model's hyperparameters and tensor shapes (F16 or Q4_0 matrices, F32 norms, every
// layer), with the data section left as a hole in the file, so that a 7B model costs no disk and
// reads as zeros (all-zero bytes are zeros in Q4_0 too: a zero scale). llama.cpp maps it
// (mmap) and creates a context of N_CTX positions and micro-batches of N_UBATCH tokens, one
// sequence; creating the context reserves its worst-case graphs (a micro-batch of N_UBATCH
// tokens, then one token, each against the whole cache), which is where the drop-in's
// GALLOC_DUMP writes them. Nothing is computed. Prints
//   size llama_cpp.MODEL.ctxN_CTX.ubN_UBATCH.attn|flash.BACKEND BYTES
// with the compute buffer llama.cpp read from its scheduler, like llama_client.cpp, then
// "done" (compare.cmake runs it as the test dropin_llama_real_dims_llama-rn-0.12.9).
//
//   llama_real_dims --list      the MODEL names
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "real_model.hpp"
#include "sched_buffer_sizes.hpp"
#include "test_support.hpp"

using namespace galloc::dropin_test;

int main(int argc, char** argv) {
  const std::string usage = "usage: llama_real_dims MODEL N_CTX N_UBATCH attn|flash DIR [f16|q4_0] | --list";
  if (argc == 2 && std::string(argv[1]) == "--list") {
    for (const RealModel& m : real_models()) std::printf("%s\n", m.name);
    return 0;
  }
  if (argc != 6 && argc != 7) fail(usage);
  const RealModel* model_dims = find_model(argv[1]);
  if (model_dims == nullptr) fail(std::string("unknown model ") + argv[1] + " (--list names them)");
  const int n_ctx = std::atoi(argv[2]), n_ubatch = std::atoi(argv[3]);
  const std::string attention = argv[4];
  const std::string weights = argc == 7 ? argv[6] : "f16";
  if (n_ctx <= 0 || n_ubatch <= 0 || (attention != "attn" && attention != "flash") ||
      (weights != "f16" && weights != "q4_0")) {
    fail(usage);
  }
  const std::string path =
      real_model_file(*model_dims, weights == "f16" ? GGML_TYPE_F16 : GGML_TYPE_Q4_0, std::string(argv[5]));

  // llama.cpp maps the file (its default load mode): the weights stay in the file's hole
  llama_model* model = load_llama_model(path);
  llama_context_params cp = context_params(static_cast<std::uint32_t>(n_ctx), static_cast<std::uint32_t>(n_ubatch));
  set_flash_attn(cp, attention == "flash", 0);
  llama_context* ctx = llama_init_from_model(model, cp);
  if (ctx == nullptr) fail("llama_init_from_model");
  const std::string key = std::string("llama_cpp.") + model_dims->name + ".ctx" + std::to_string(n_ctx) + ".ub" +
                          std::to_string(n_ubatch) + "." + attention;
  for (const auto& [backend, size] : compute_sizes())
    std::printf("size %s.%s %zu\n", key.c_str(), backend.c_str(), size);
  llama_free(ctx);
  llama_model_free(model);
  llama_backend_free();
  std::printf("done\n");
  return 0;
}
