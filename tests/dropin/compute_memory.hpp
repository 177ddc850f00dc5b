// The compute memory a program holds, counted by buffer usage, for the programs linked with
// -Wl,--wrap= for ggml_backend_buft_alloc_buffer (every buffer's size),
// ggml_backend_buffer_set_usage (ggml-alloc marks its buffers GGML_BACKEND_BUFFER_USAGE_COMPUTE;
// model weights, caches and llama.cpp's output buffer are not) and ggml_backend_buffer_free
// (app_client.cpp, llama_share_client.cpp). Defines the wrappers: include it in one file of a
// program only.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>

#include "ggml-backend.h"
#include "test_support.hpp"

extern "C" {
ggml_backend_buffer_t __real_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size);
void __real_ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage);
void __real_ggml_backend_buffer_free(ggml_backend_buffer_t buffer);
}

namespace galloc::dropin_test {

struct ComputeMemory {
  std::unordered_map<ggml_backend_buffer_t, size_t> sizes;  // every live buffer
  std::unordered_map<ggml_backend_buffer_t, bool> compute;  // those marked for compute
  size_t live = 0;
  size_t peak = 0;
};

inline ComputeMemory& memory() {
  static ComputeMemory m;
  return m;
}

// A shared compute buffer that grew released its old memory but keeps the old handle, emptied
// (size 0), until its arena goes (the drop-in's shared arenas): that memory is no longer held.
inline void forget_released() {
  ComputeMemory& m = memory();
  for (auto it = m.compute.begin(); it != m.compute.end();) {
    const size_t size = m.sizes[it->first];
    if (!it->second || size == 0 || ggml_backend_buffer_get_size(it->first) != 0) {
      ++it;
      continue;
    }
    m.live -= size;
    m.sizes.erase(it->first);
    it = m.compute.erase(it);
  }
}

// The largest compute buffer held now (released ones forgotten first).
inline size_t largest_compute_buffer() {
  forget_released();
  size_t largest = 0;
  for (const auto& [buffer, is_compute] : memory().compute) {
    if (is_compute) largest = std::max(largest, memory().sizes[buffer]);
  }
  return largest;
}

// The compute buffers held now, as `info KEY <count>, the largest <bytes>`: unshared, the
// largest is the largest member's own buffer. With `shared` (the members made in one share
// group), more than the group's one buffer fails.
inline void report_compute_buffers(bool shared, const std::string& key) {
  const size_t largest = largest_compute_buffer();
  const size_t buffers = memory().compute.size();
  if (shared && buffers != 1) fail(key + ": " + std::to_string(buffers) + " compute buffers, not the group's one");
  info(key, std::to_string(buffers) + ", the largest " + std::to_string(largest));
}

}  // namespace galloc::dropin_test

extern "C" {

ggml_backend_buffer_t __wrap_ggml_backend_buft_alloc_buffer(ggml_backend_buffer_type_t buft, size_t size) {
  galloc::dropin_test::forget_released();
  ggml_backend_buffer_t buffer = __real_ggml_backend_buft_alloc_buffer(buft, size);
  if (buffer != nullptr) galloc::dropin_test::memory().sizes[buffer] = size;
  return buffer;
}

void __wrap_ggml_backend_buffer_set_usage(ggml_backend_buffer_t buffer, enum ggml_backend_buffer_usage usage) {
  __real_ggml_backend_buffer_set_usage(buffer, usage);
  galloc::dropin_test::ComputeMemory& m = galloc::dropin_test::memory();
  auto size = m.sizes.find(buffer);
  if (usage != GGML_BACKEND_BUFFER_USAGE_COMPUTE || size == m.sizes.end() || m.compute[buffer]) return;
  m.compute[buffer] = true;
  m.live += size->second;
  m.peak = std::max(m.peak, m.live);
}

void __wrap_ggml_backend_buffer_free(ggml_backend_buffer_t buffer) {
  galloc::dropin_test::ComputeMemory& m = galloc::dropin_test::memory();
  if (auto it = m.compute.find(buffer); it != m.compute.end()) {
    if (it->second) m.live -= m.sizes[buffer];
    m.compute.erase(it);
  }
  m.sizes.erase(buffer);
  __real_ggml_backend_buffer_free(buffer);
}

}  // extern "C"
