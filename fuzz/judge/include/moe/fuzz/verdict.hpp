// The one verdict: an implementation's output and contract against the spec, per token
// (docs/design.md §3). Decided the CGAL way: float comparisons first (exact), a binary64 filter
// with a derived error bound next, MPFR enclosures from the oracle only when undecided;
// LevelCounters says how often each level decided. Budgets are derived in docs/fuzz.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"
#include "moe/fuzz/router.hpp"
#include "moe/fuzz/violation_kind.hpp"

namespace moe::fuzz {

enum class Outcome { kExact = 0, kAcceptable = 1, kViolation = 2 };
const char* outcomeName(Outcome o);

struct Verdict {
  Outcome outcome = Outcome::kExact;
  // acceptable: "near-tie-probabilities", "near-tie-order", "tie-order", "nonreal-row"
  std::string reason;
  ViolationKind kind = ViolationKind::kNone;  // violation: kindName() gives the spelling
  std::string tag;          // what a signature adds to the kind: the signal of a crash, "ids", ...
  std::string certificate;  // the evidence, with numbers (hex and decimal)
  int32_t token = -1;
  double margin = 0;  // acceptable: worst (difference / budget) <= 1; violation: > 1
  // A gate kind's hypothesis, for its confirmation by a rerun (confirmGateCause): "bias",
  // "scale", "renorm-flag" (the renormalize flag not followed), "renorm-set" (the sum of
  // another set, matched by number alone); "" otherwise.
  std::string cause;
  std::string causeText;  // the cause as the certificate words it ("the gates are ...")
};

// True for the gate kinds that name a cause: gate-bias, gate-scale, gate-renorm.
bool isGateCause(ViolationKind kind);
// A named cause the evidence does not bear out becomes gate-error, the certificate saying
// which hypothesis the numbers fit and why it was not kept.
void causeNotConfirmed(Verdict& v, std::string_view why);

// Knobs the CLI exposes (--gate-factor, --gate-ulp, --no-analytic-floor, --tie-order).
struct VerdictConfig {
  std::optional<TieOrder> tieOrder;  // overrides the contract's tie_order
  std::optional<double> gateFactor;  // overrides the contract's spec32_factor
  std::optional<double> gateUlp;     // overrides the contract's ulp
  bool analyticFloor = true;         // add the derived first-order gate bound
  // True when the caller chose analyticFloor (--no-analytic-floor): a reproducer's recorded
  // value then does not replace it (recordedConfig).
  bool analyticFloorGiven = false;
  bool checkBatchInvariance = true;  // when the contract claims it
  // Decide the clear tokens at the first level (docs/fuzz.md, "The first level") before the
  // ladder. Off only to compare the two (the verdicts are the same either way).
  bool firstLevel = true;
  // Threads that judge the tokens of a case (--jobs); verdicts, counters and everything
  // reported are the same for any number.
  int jobs = 1;
};

struct LevelCounters {
  uint64_t firstLevel = 0;          // tokens decided whole by the first level (not counted below)
  uint64_t selectionFloat = 0;      // kept set/order decided by float comparisons alone
  uint64_t selectionDouble = 0;     // a near-tie decided by the binary64 filter
  uint64_t selectionCertified = 0;  // ... by MPFR enclosures
  uint64_t selectionUndecided = 0;  // enclosures too wide: the router got the benefit
  uint64_t gateDouble = 0;
  uint64_t gateCertified = 0;
  uint64_t gateUndecided = 0;
};

// The probability budget b_i of docs/fuzz.md: a bound on |q_i - p_i| for any router that
// evaluates TorchLean's softmax in binary32 with an exp within c ulp of correct rounding:
//   b_i = (|x_i - m| + 2E + 4c + 4) u p_i + (c + 2) 2^-149,   u = 2^-24.
double probabilityBudget(double p, double absShift, int32_t experts, double expUlp);

// The analytic gate floor of docs/fuzz.md for the gate of e in the router's kept set S:
//   (|x_e - m| + sum_{j in S} G_j |x_j - m| + 2|S| + 4c + 8) u G
//     + (E + 1)(|S| + 1)(c + 2) 2^-149.
double gateFloor(double exactGate, double shiftE, double weightedShiftS, int32_t keptCount,
                 int32_t experts, double expUlp);

// Judges one token's output (ids and gates: k slots each): the ladder alone (the first
// level is judgeRecorded's).
Verdict judgeToken(std::span<const float> logits, int32_t k, std::span<const int32_t> ids,
                   std::span<const float> gates, const Contract& contract,
                   const VerdictConfig& config, LevelCounters& levels);

// Judges one token of a moe_route_v2 router on a valid family (docs/fuzz.md, "The routing
// family"): structure with min(k, eligible) slots, groups and biased keys within their
// binary32 budgets (exact ties to the lower index), slot order, and the gates against the
// unbiased scores of the router's own kept set.
Verdict judgeFamilyToken(std::span<const float> logits, const Family& family, int32_t k,
                         std::span<const int32_t> ids, std::span<const float> gates,
                         const Contract& contract, const VerdictConfig& config,
                         LevelCounters& levels);

// The verdicts of a case's tokens, in token order. Most tokens are `exact`, or `acceptable`
// as a non-real row, with nothing more to say (no certificate, kind, margin or cause): those
// are kept as a code of four bytes, and their Verdict is made when one is asked for; the
// others are kept whole. Reading yields Verdicts by value.
class TokenVerdicts {
 public:
  // The verdicts of the tokens from firstToken on (a part of a case judged on its own).
  explicit TokenVerdicts(size_t firstToken = 0) : first_(firstToken) {}
  size_t size() const { return codes_.size(); }
  bool empty() const { return codes_.empty(); }
  void reserve(size_t n) { codes_.reserve(n); }
  Verdict operator[](size_t t) const;
  Verdict at(size_t t) const;  // std::out_of_range past the end
  Verdict back() const { return (*this)[size() - 1]; }
  // Appends the next token's verdict (its token field says which token it is).
  void push_back(Verdict v);
  // The next token is exact / acceptable as a non-real row, with nothing more to say.
  void pushExact() { codes_.push_back(kExactCode); }
  void pushNonrealRow() {
    codes_.push_back(kNonrealCode);
    ++nonreal_;
  }
  // Appends the verdicts of the part of the case that follows these.
  void append(TokenVerdicts&& more);
  // Tallies without making a Verdict per token: the plain tokens by outcome, and the
  // verdicts kept whole, in token order.
  uint64_t plainExact() const { return codes_.size() - nonreal_ - whole_.size(); }
  uint64_t plainNonrealRows() const { return nonreal_; }
  const std::vector<Verdict>& whole() const { return whole_; }
  std::vector<Verdict> all() const;

  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Verdict;
    using difference_type = std::ptrdiff_t;
    using pointer = void;
    using reference = Verdict;
    Iterator(const TokenVerdicts* of, size_t at) : of_(of), at_(at) {}
    Verdict operator*() const { return (*of_)[at_]; }
    Iterator& operator++() {
      ++at_;
      return *this;
    }
    bool operator==(const Iterator& o) const { return at_ == o.at_; }

   private:
    const TokenVerdicts* of_;
    size_t at_;
  };
  Iterator begin() const { return {this, 0}; }
  Iterator end() const { return {this, size()}; }

 private:
  static constexpr uint32_t kExactCode = 0xffffffffu, kNonrealCode = 0xfffffffeu;
  std::vector<uint32_t> codes_;  // a plain code, or the index in whole_
  std::vector<Verdict> whole_;
  size_t first_ = 0;
  uint64_t nonreal_ = 0;
};

struct CaseResult {
  bool abstained = false;
  std::string abstainReason;
  RouteOutput output;
  TokenVerdicts tokens;              // one per token (until the first violation)
  std::optional<Verdict> violation;  // the first violation, if any
  Outcome worst() const;
};

// Routes the case and judges every token; then, when the contract claims batch
// invariance, reruns one of: the token at case.split alone, the batch split at case.split,
// the batch with another thread count (picked by case.variant), and requires the same bits.
// A gate kind that names a cause (gate-bias, gate-scale, gate-renorm) is then confirmed by
// rerunning the router on the violating token varied in the one parameter the cause names
// (the bias set to zero, another scale, the renormalize flag flipped), and kept only when
// the error follows; else it becomes gate-error.
CaseResult judgeCase(const Router& router, const Case& c, const VerdictConfig& config,
                     LevelCounters& levels);

// Judges a recorded output (a reproducer's ids and gates) without calling any router.
CaseResult judgeRecorded(const Case& c, std::span<const int32_t> ids, std::span<const float> gates,
                         const Contract& contract, const VerdictConfig& config,
                         LevelCounters& levels);

// The one judge: the verdict configuration and the level counters, used by every
// path that judges (moe-oracle fuzz, replay and explain, the libFuzzer targets, the crash
// reproducer), so that a case is judged the same way wherever it is run.
class Judge {
 public:
  explicit Judge(VerdictConfig config = {}) : config_(config) {}
  // Runs the router on the case and judges it (judgeCase).
  CaseResult run(const Router& router, const Case& c) {
    return judgeCase(router, c, config_, levels_);
  }
  // Judges an output recorded earlier (a reproducer's), without a router.
  CaseResult recorded(const Case& c, std::span<const int32_t> ids, std::span<const float> gates,
                      const Contract& contract) {
    return judgeRecorded(c, ids, gates, contract, config_, levels_);
  }
  Verdict token(std::span<const float> logits, int32_t k, std::span<const int32_t> ids,
                std::span<const float> gates, const Contract& contract) {
    return judgeToken(logits, k, ids, gates, contract, config_, levels_);
  }
  const VerdictConfig& config() const { return config_; }
  const LevelCounters& levels() const { return levels_; }

 private:
  VerdictConfig config_;
  LevelCounters levels_;
};

// The cores this process may run on (sched_getaffinity), at least 1: --jobs' default.
int availableCores();

// True for rows whose spec values are real numbers: no NaN, no +inf, some logit > -inf.
bool isRealRow(std::span<const float> logits);

}  // namespace moe::fuzz
