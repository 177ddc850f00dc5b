#pragma once

#include <cstdint>

namespace galloc::detail {

// The exact product of two 64-bit numbers, as two 64-bit halves, for ranking by size x
// lifetime without rounding: then the order, and with it the placement, is the same under
// any floating-point model an app builds with (-ffp-model=fast, say) and on 32-bit targets,
// which have no 128-bit integer type.
class WideProduct {
 public:
  WideProduct(std::uint64_t a, std::uint64_t b) {
    const std::uint64_t a_low = a & 0xffffffffu, a_high = a >> 32;
    const std::uint64_t b_low = b & 0xffffffffu, b_high = b >> 32;
    const std::uint64_t low_low = a_low * b_low;
    const std::uint64_t high_low = a_high * b_low;
    const std::uint64_t low_high = a_low * b_high;
    const std::uint64_t middle = (low_low >> 32) + (high_low & 0xffffffffu) + (low_high & 0xffffffffu);
    low_ = (middle << 32) | (low_low & 0xffffffffu);
    high_ = a_high * b_high + (high_low >> 32) + (low_high >> 32) + (middle >> 32);
  }
  friend bool operator>(const WideProduct& x, const WideProduct& y) {
    return x.high_ != y.high_ ? x.high_ > y.high_ : x.low_ > y.low_;
  }
  [[nodiscard]] std::uint64_t high() const { return high_; }
  [[nodiscard]] std::uint64_t low() const { return low_; }
  friend bool operator!=(const WideProduct& x, const WideProduct& y) { return x.high_ != y.high_ || x.low_ != y.low_; }

 private:
  std::uint64_t high_ = 0;
  std::uint64_t low_ = 0;
};

}  // namespace galloc::detail
