// ggml's log in the drop-in's test and benchmark programs: warnings and errors to stderr, the
// rest (a line per buffer ggml allocates) dropped.
#pragma once

#include <cstdio>

#include "ggml.h"

namespace galloc::dropin_test {

inline void log_ggml_warnings_only() {
  ggml_log_set(
      [](ggml_log_level level, const char* text, void*) {
        if (level >= GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
      },
      nullptr);
}

}  // namespace galloc::dropin_test
