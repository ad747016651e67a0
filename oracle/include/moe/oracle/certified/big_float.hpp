#pragma once
// An owning MPFR number (RAII around mpfr_t), so enclosures can be returned by value.
#include <mpfr.h>

#include <string>

namespace moe::oracle::certified {

class BigFloat {
 public:
  explicit BigFloat(mpfr_prec_t precision = 80);
  BigFloat(const BigFloat& other);
  BigFloat(BigFloat&& other) noexcept;
  BigFloat& operator=(const BigFloat& other);
  BigFloat& operator=(BigFloat&& other) noexcept;
  ~BigFloat();

  mpfr_ptr get() { return value_; }
  mpfr_srcptr get() const { return value_; }
  mpfr_prec_t precision() const { return mpfr_get_prec(value_); }
  // Decimal text with `digits` significant digits (round to nearest), for messages.
  std::string toString(int digits = 25) const;

 private:
  mpfr_t value_;
  bool owned_ = true;  // false once moved from
};

}  // namespace moe::oracle::certified
