// A llama.rn context's two members at real dimensions in one share group (galloc-ggml.h),
// created as llama.rn creates them after galloc-rn apply, with nothing computed: the compute
// memory users load, in make test's time. Each member reserves its worst-case graphs when it is
// made, which is where its compute buffer is allocated; bench/llama_share.sh runs the same pairs
// through a realistic run, with random encoder weights.
//
//   llama_real_share_client vision|audio|mtp DIR [share]
//
//   vision  LLaVA-1.5-7B: Llama-2-7B's text model, then mtmd's encoder from its projector
//           (CLIP ViT-L/14 at 336 pixels, mmproj_model.hpp's kLlava15Vision)
//   audio   GLM-ASR-Nano-2512: its text model, then mtmd's encoder (Whisper large-v3's,
//           kGlmAsrNanoAudio)
//   mtp     Qwen3.5-0.8B's text model with its MTP head, then the draft, an MTP context on the
//           target (mtp_model.hpp)
//
// The models are written into DIR unless they are there, every weight zero (a hole in the
// file). The text models' matrices are IQ1_S, the smallest type llama.cpp's CPU backend takes:
// llama.cpp reads the whole mapped file at load (MAP_POPULATE), and a zero F16 7B took 34
// seconds and 14 GB of page cache that way. The weights' type does not change a compute buffer
// (every activation is F32). The target's context: 2048 positions, batches of 128, as the
// bench's. The second member is made as initMultimodal or createMTPDraftContext makes it, in the
// target's group with "share". Prints the compute buffers held while both live (info), the
// largest and the compute memory held at the peak (size lines), then "done": compare.cmake
// checks the sizes against stock's, packages_test.sh the shared peak against the largest
// member's need.
#include <cstdio>
#include <filesystem>
#include <string>

#include "compute_memory.hpp"
#include "ggml.h"
#include "llama.h"
#include "llama_model.hpp"
#include "llama_share_group.hpp"
#include "mmproj_model.hpp"
#include "mtmd.h"
#include "mtp_model.hpp"
#include "real_model.hpp"
#include "test_support.hpp"

namespace {

using namespace galloc::dropin_test;

constexpr std::uint32_t kPositions = 2048;
constexpr std::uint32_t kBatch = 128;

// DIR/NAME's path, written by `write` unless it exists.
template <typename Write>
std::string model_file(const std::string& dir, const std::string& name, Write write) {
  const std::string path = dir + "/" + name + ".gguf";
  if (!std::filesystem::exists(path)) write(path);
  return path;
}

std::string text_model(const std::string& dir, const char* name) {
  const RealModel* dims = find_model(name);
  if (dims == nullptr) fail(std::string("no real model ") + name);
  return real_model_file(*dims, GGML_TYPE_IQ1_S, dir);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) fail("usage: llama_real_share_client vision|audio|mtp DIR [share]");
  const std::string kind = argv[1], dir = argv[2];
  if (kind != "vision" && kind != "audio" && kind != "mtp") fail("the pair is vision, audio or mtp, not " + kind);
  const bool share = argc > 3 && std::string(argv[3]) == "share";
  if (share && !kHasShareGroups) fail("share: built without galloc-rn's helper (GALLOC_RN_LLAMA_GROUP)");
  std::filesystem::create_directories(dir);

  llama_model* model = nullptr;
  llama_context* target = nullptr;
  llama_context* draft = nullptr;
  mtmd_context* encoder = nullptr;
  if (kind == "mtp") {
    const std::string path = model_file(dir, "qwen3.5-0.8b-mtp", [](const std::string& p) {
      write_qwen35_mtp_model(p, kQwen35_0_8B, 0, Weights::kZero);
    });
    model = load_mtp_model(path);
    llama_context_params params = context_params(kPositions, kBatch);
    params.n_rs_seq = 3;  // loadModel's room for draft-mtp's rollbacks (speculative.n_max)
    target = make_llama_context(model, params, share);
    if (target == nullptr) fail("llama_init_from_model: target");
    draft = make_mtp_draft_context(model, target, context_params(kPositions, kBatch), share);
    if (draft == nullptr) fail("llama_init_from_model: MTP draft");
  } else {
    const bool audio = kind == "audio";
    model = load_llama_model(text_model(dir, audio ? "glm-asr-nano-text" : "llama-2-7b"));
    target = make_llama_context(model, context_params(kPositions, kBatch), share);
    if (target == nullptr) fail("llama_init_from_model");
    const std::string mmproj =
        model_file(dir, audio ? "glm-asr-nano-mmproj" : "llava-1.5-7b-mmproj", [&](const std::string& p) {
          if (audio) {
            write_mmproj(p, kGlmAsrNanoAudio, 0, Weights::kZero);
          } else {
            write_mmproj(p, kLlava15Vision, 0, Weights::kZero);
          }
        });
    encoder = make_mtmd_context(mmproj, model, share);
    if (audio ? !mtmd_support_audio(encoder) : !mtmd_support_vision(encoder))
      fail("the projector has no " + kind + " encoder");
  }
  const std::string key = "llama_real_share." + kind;
  report_compute_buffers(share, key + ".compute_buffers");
  size_line(key + ".largest_buffer", largest_compute_buffer());

  if (encoder != nullptr) mtmd_free(encoder);
  if (draft != nullptr) llama_free(draft);
  llama_free(target);
  llama_model_free(model);
  llama_backend_free();
  forget_released();
  size_line(key + ".compute_peak", memory().peak);
  if (memory().live != 0) fail(std::to_string(memory().live) + " bytes of compute buffers left after freeing both");
  std::printf("done\n");
  return 0;
}
