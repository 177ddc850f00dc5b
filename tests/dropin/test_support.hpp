// What every drop-in test program shares: failing with a message, the lines it reports,
// hashing results, and a small deterministic random generator (the stock and galloc builds of a program must draw
// the same weights and inputs, so this is a fixed xorshift rather than <random>).
#pragma once

#include <cerrno>  // program_invocation_short_name
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace galloc::dropin_test {

[[noreturn]] inline void fail(const std::string& what) {
  std::fprintf(stderr, "%s: %s\n", program_invocation_short_name, what.c_str());
  std::fflush(stdout);
  std::exit(1);
}

inline void check(bool ok, const std::string& what) {
  if (!ok) fail(what);
}

// The lines tests/dropin/compare.cmake reads from a program's output, one fact each: `exact`
// lines must be the same with stock and galloc; `size` lines are bytes, equal with
// GALLOC_STRATEGY=ggml and no larger with best; `layout` lines say where tensors went, equal
// with ggml; `info` lines are only shown.
inline void report(const char* kind, const std::string& key, const std::string& value) {
  std::printf("%s %s %s\n", kind, key.c_str(), value.c_str());
}
inline void exact(const std::string& key, const std::string& value) { report("exact", key, value); }
inline void exact(const std::string& key, std::uint64_t value) { report("exact", key, std::to_string(value)); }
inline void size_line(const std::string& key, std::uint64_t value) { report("size", key, std::to_string(value)); }
inline void layout(const std::string& key, const std::string& value) { report("layout", key, value); }
inline void info(const std::string& key, const std::string& value) { report("info", key, value); }

inline std::uint64_t fnv1a(const void* data, std::size_t n, std::uint64_t h = 0xcbf29ce484222325ull) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

inline std::string hex(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%016" PRIx64, v);
  return buf;
}

// The index of the largest of n values (greedy decoding).
inline int argmax(const float* logits, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i) {
    if (logits[i] > logits[best]) best = i;
  }
  return best;
}

struct Rng {
  std::uint64_t s;
  explicit Rng(std::uint64_t seed) : s(seed * 0x9e3779b97f4a7c15ull + 1) {}
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  // uniform in [-scale, scale)
  float uniform(float scale) { return (static_cast<float>(next() >> 40) / 16777216.0f - 0.5f) * 2.0f * scale; }
  // uniform in [0, n)
  std::int64_t below(std::int64_t n) { return static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(n)); }
};

}  // namespace galloc::dropin_test
