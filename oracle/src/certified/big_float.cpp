#include "moe/oracle/certified/big_float.hpp"

#include <cstdlib>
#include <memory>

namespace moe::oracle::certified {

BigFloat::BigFloat(mpfr_prec_t precision) {
  mpfr_init2(value_, precision);
  mpfr_set_zero(value_, 1);
}

BigFloat::BigFloat(const BigFloat& other) {
  mpfr_init2(value_, mpfr_get_prec(other.value_));
  mpfr_set(value_, other.value_, MPFR_RNDN);  // same precision: exact
}

BigFloat::BigFloat(BigFloat&& other) noexcept {
  // Steal the limbs; the moved-from object keeps no storage and is only destroyed.
  *value_ = *other.value_;
  owned_ = other.owned_;
  other.owned_ = false;
}

BigFloat& BigFloat::operator=(const BigFloat& other) {
  if (this != &other) {
    if (!owned_) {
      mpfr_init2(value_, mpfr_get_prec(other.value_));
      owned_ = true;
    } else {
      mpfr_set_prec(value_, mpfr_get_prec(other.value_));
    }
    mpfr_set(value_, other.value_, MPFR_RNDN);
  }
  return *this;
}

BigFloat& BigFloat::operator=(BigFloat&& other) noexcept {
  if (this != &other) {
    if (owned_) mpfr_clear(value_);
    *value_ = *other.value_;
    owned_ = other.owned_;
    other.owned_ = false;
  }
  return *this;
}

BigFloat::~BigFloat() {
  if (owned_) mpfr_clear(value_);
}

std::string BigFloat::toString(int digits) const {
  if (!owned_) return "<moved-from>";
  char* text = nullptr;
  if (mpfr_asprintf(&text, "%.*Rg", digits, value_) < 0 || text == nullptr) return "?";
  std::string out(text);
  mpfr_free_str(text);
  return out;
}

}  // namespace moe::oracle::certified
