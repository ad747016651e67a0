// A case's token verdicts, kept as codes where a token has nothing more to say
// (verdict.hpp's TokenVerdicts).
#include <bit>
#include <stdexcept>
#include <string>
#include <utility>

#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

namespace {

// A verdict its code makes again, field for field: exact with nothing said, or acceptable
// as a non-real row with nothing else said, about the token it is pushed as.
bool plain(const Verdict& v, size_t t) {
  const bool quiet = v.kind == ViolationKind::kNone && v.tag.empty() && v.certificate.empty() &&
                     std::bit_cast<uint64_t>(v.margin) == 0 && v.cause.empty() &&
                     v.causeText.empty() && v.token == static_cast<int32_t>(t);
  return quiet && ((v.outcome == Outcome::kExact && v.reason.empty()) ||
                   (v.outcome == Outcome::kAcceptable && v.reason == "nonreal-row"));
}

}  // namespace

Verdict TokenVerdicts::operator[](size_t t) const {
  const uint32_t code = codes_[t];
  if (code < kNonrealCode) return whole_[code];
  Verdict v;
  v.token = static_cast<int32_t>(first_ + t);
  if (code == kNonrealCode) {
    v.outcome = Outcome::kAcceptable;
    v.reason = "nonreal-row";
  }
  return v;
}

Verdict TokenVerdicts::at(size_t t) const {
  if (t >= codes_.size()) {
    throw std::out_of_range("token " + std::to_string(t) + " of " + std::to_string(codes_.size()) +
                            " judged");
  }
  return (*this)[t];
}

void TokenVerdicts::push_back(Verdict v) {
  if (plain(v, first_ + codes_.size())) {
    if (v.outcome == Outcome::kExact) {
      pushExact();
    } else {
      pushNonrealRow();
    }
    return;
  }
  codes_.push_back(static_cast<uint32_t>(whole_.size()));
  whole_.push_back(std::move(v));
}

void TokenVerdicts::append(TokenVerdicts&& more) {
  if (more.first_ != first_ + size()) {
    throw std::logic_error("TokenVerdicts::append: the parts are not consecutive");
  }
  const auto offset = static_cast<uint32_t>(whole_.size());
  codes_.reserve(codes_.size() + more.codes_.size());
  for (uint32_t code : more.codes_) codes_.push_back(code < kNonrealCode ? code + offset : code);
  for (Verdict& v : more.whole_) whole_.push_back(std::move(v));
  nonreal_ += more.nonreal_;
}

std::vector<Verdict> TokenVerdicts::all() const {
  std::vector<Verdict> out;
  out.reserve(size());
  for (size_t t = 0; t < size(); ++t) out.push_back((*this)[t]);
  return out;
}

}  // namespace moe::fuzz
