// The compute buffer sizes llama.cpp reads from its scheduler, per backend name, for the
// programs linked with -Wl,--wrap=ggml_backend_sched_get_buffer_size (llama_client.cpp,
// llama_real_dims.cpp). Defines the wrapper: include it in one file of a program only.
#pragma once

#include <cstddef>
#include <map>
#include <string>

#include "ggml-backend.h"

extern "C" size_t __real_ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend);

namespace galloc::dropin_test {

// the latest size read, per backend name
inline std::map<std::string, size_t>& compute_sizes() {
  static std::map<std::string, size_t> sizes;
  return sizes;
}

}  // namespace galloc::dropin_test

extern "C" size_t __wrap_ggml_backend_sched_get_buffer_size(ggml_backend_sched_t sched, ggml_backend_t backend) {
  const size_t size = __real_ggml_backend_sched_get_buffer_size(sched, backend);
  galloc::dropin_test::compute_sizes()[ggml_backend_name(backend)] = size;
  return size;
}
