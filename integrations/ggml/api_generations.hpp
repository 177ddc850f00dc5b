// The ggml API generations the drop-in serves, told apart at compile time from what ggml's
// headers declare (never from a version string): the 2023 one of whisper.rn 0.4.0-rc.8
// (ggml_allocr_*, measure allocators), the late-2024 one of whisper.rn 0.4.0-rc.10, and
// everything after it. The last two share ggml-alloc-2024.cpp.
#pragma once

#include "ggml-alloc.h"
#include "ggml-backend-impl.h"
#include "ggml-backend.h"
#include "ggml-impl.h"
#include "ggml.h"

#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

// The 2023 generation has different types and signatures in ggml-alloc.h (ggml_gallocr_new
// takes no buffer type there), so it is told apart by the preprocessor: its ggml-impl.h has no
// logging macros, which came with the ggml-alloc.h of late 2024.
#if defined(GGML_LOG_ERROR)
#define GALLOC_GGML_2023_API 0
#else
#define GALLOC_GGML_2023_API 1
#endif

namespace {

// Whether ggml's headers declare a function is asked by overload resolution: each probed name
// also has a template here that returns Missing, and a real declaration (found through its
// ggml argument types) is the better match.
namespace fallback {
struct Missing {};
template <typename... Args>
Missing ggml_backend_buft_is_meta(Args...);
template <typename... Args>
Missing ggml_backend_meta_alloc_ctx_tensors_from_buft(Args...);
template <typename... Args>
Missing ggml_clamp_inplace(Args...);
template <typename... Args>
Missing ggml_allocr_new_measure(Args...);
}  // namespace fallback

template <typename T>
inline constexpr bool kDeclared = !std::is_same_v<T, fallback::Missing>;

using namespace fallback;  // NOLINT(google-build-using-namespace): the probes above

// A ggml between the two (ggml's of early to late 2024: no logging macros, no measure
// allocator) is served by neither; no npm package checked ships one.
static_assert(!GALLOC_GGML_2023_API || kDeclared<decltype(ggml_allocr_new_measure(std::size_t{0}))>,
              "galloc: this ggml-impl.h has no GGML_LOG_ERROR, so this is a ggml from before late 2024, "
              "but its ggml-alloc.h has no ggml_allocr_new_measure either: galloc serves the 2023 ggml-alloc.h "
              "and those from late 2024 on; keep this ggml's own ggml-alloc.c");

// ggml_tallocr_alloc returns void in the late-2024 API (whisper.rn 0.4.0-rc.10's ggml), enum
// ggml_status after it (cui-llama.rn 1.6.0 on); so do ggml_backend_tensor_alloc and
// ggml_backend_view_init. The late-2024 ggml also reuses fewer ops' sources in place and
// refuses a context tensor larger than the buffer type's max size.
using TallocrAllocResult = decltype(ggml_tallocr_alloc(nullptr, nullptr));
inline constexpr bool kLate2024Api = std::is_void_v<TallocrAllocResult>;

// Newer ggml (whisper.rn 0.7, llama.rn 0.13) computes CLAMP out of place by default, has a
// ggml_clamp_inplace, and lets ggml-alloc reuse CLAMP's source in place; before, ggml_clamp was
// itself a view.
inline constexpr bool kClampReusesSource =
    kDeclared<decltype(ggml_clamp_inplace(std::declval<ggml_context*>(), std::declval<ggml_tensor*>(), 0.0f, 0.0f))>;

// Meta buffer types (one buffer type over several devices) allocate context tensors
// themselves.
inline constexpr bool kHasMetaBufferTypes =
    kDeclared<decltype(ggml_backend_buft_is_meta(std::declval<ggml_backend_buffer_type_t>()))>;

// A tensor's flags (input, output...): the 2023 generation has none.
template <typename Tensor>
auto tensor_flags(const Tensor* t, int) -> decltype(static_cast<std::uint32_t>(t->flags)) {
  return static_cast<std::uint32_t>(t->flags);
}
template <typename Tensor>
std::uint32_t tensor_flags(const Tensor*, long) {
  return 0;
}
inline std::uint32_t flags_of(const ggml_tensor* t) { return tensor_flags(t, 0); }

#if !GALLOC_GGML_2023_API
// A ggml call's result as a status, for calls that return void in the late-2024 API.
template <typename Call>
ggml_status status_of(Call&& call) {
  if constexpr (std::is_void_v<decltype(call())>) {
    call();
    return GGML_STATUS_SUCCESS;
  } else {
    return call();
  }
}

// What ggml_tallocr_alloc returns: nothing in the late-2024 API, else the status.
template <typename Result>
Result tallocr_result(ggml_status status) {
  if constexpr (std::is_void_v<Result>) {
    static_cast<void>(status);
  } else {
    return status;
  }
}

#endif  // !GALLOC_GGML_2023_API

template <typename BufferType>
bool is_meta(BufferType buft) {
  if constexpr (kHasMetaBufferTypes) {
    return ggml_backend_buft_is_meta(buft);
  } else {
    static_cast<void>(buft);
    return false;
  }
}

template <typename Context, typename BufferType>
ggml_backend_buffer_t meta_alloc_ctx_tensors(Context* ctx, BufferType buft) {
  if constexpr (kHasMetaBufferTypes) {
    return ggml_backend_meta_alloc_ctx_tensors_from_buft(ctx, buft);
  } else {
    static_cast<void>(ctx);
    static_cast<void>(buft);
    return nullptr;
  }
}

}  // namespace
