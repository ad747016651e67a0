#include "sums_of_others.hpp"

namespace moe::oracle::certified::detail {

void SumsOfOthers::lower(std::size_t t, mpfr_ptr out) const {
  mpfr_add(out, beforeLo_[t].get(), fromLo_[t + 1].get(), MPFR_RNDD);
}

void SumsOfOthers::upper(std::size_t t, mpfr_ptr out) const {
  mpfr_add(out, beforeHi_[t].get(), fromHi_[t + 1].get(), MPFR_RNDU);
}

void SumsOfOthers::prepare(std::size_t n, mpfr_prec_t precision) {
  for (auto* v : {&beforeLo_, &beforeHi_, &fromLo_, &fromHi_}) {
    if (precision != precision_) {
      for (auto& x : *v) mpfr_set_prec(x.get(), precision);
    }
    while (v->size() < n + 1) v->emplace_back(precision);
  }
  precision_ = precision;
}

}  // namespace moe::oracle::certified::detail
