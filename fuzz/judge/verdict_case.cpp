// judgeCase: run a router on a case, judge every token, then check batch invariance.
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <optional>
#include <vector>

#include "judge_pool.hpp"
#include "moe/fuzz/first_level.hpp"
#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/route_status.hpp"
#include "moe/fuzz/verdict.hpp"

namespace moe::fuzz {

bool isGateCause(ViolationKind kind) {
  return kind == ViolationKind::kGateBias || kind == ViolationKind::kGateScale ||
         kind == ViolationKind::kGateRenorm;
}

void causeNotConfirmed(Verdict& v, std::string_view why) {
  // The cause leaves the certificate's claims and is told as the hypothesis it was.
  const std::string claim = "; " + v.causeText;
  if (const size_t at = v.certificate.rfind(claim);
      !v.causeText.empty() && at != std::string::npos) {
    v.certificate.erase(at, claim.size());
  }
  v.certificate +=
      fmt::format("; the numbers fit {}{}, but {}: the cause is not confirmed", kindName(v.kind),
                  v.causeText.empty() ? "" : fmt::format(" ({})", v.causeText), why);
  v.kind = ViolationKind::kGateError;
  v.cause.clear();
  v.causeText.clear();
}

Outcome CaseResult::worst() const {
  Outcome w = tokens.plainNonrealRows() > 0 ? Outcome::kAcceptable : Outcome::kExact;
  for (const Verdict& v : tokens.whole()) w = std::max(w, v.outcome);
  if (violation) w = Outcome::kViolation;
  return w;
}

namespace {

// Token t of the case: the first level, and the ladder when it does not decide; the verdict
// is appended to `out`. True when it is a violation.
bool judgeOne(const Case& c, int32_t t, const Family* family, std::span<const int32_t> ids,
              std::span<const float> gates, const Contract& contract, const VerdictConfig& config,
              LevelCounters& levels, TokenVerdicts& out) {
  const size_t k = static_cast<size_t>(c.k);
  const auto tokenIds = ids.subspan(t * k, k);
  const auto tokenGates = gates.subspan(t * k, k);
  if (config.firstLevel) {
    const first::Decided d =
        family ? first::decideFamilyToken(c.row(t), *family, c.k, tokenIds, tokenGates, contract,
                                          config)
               : first::decideToken(c.row(t), c.k, tokenIds, tokenGates, contract, config);
    if (d != first::Decided::kNo) {
      ++levels.firstLevel;
      if (d == first::Decided::kExact) {
        out.pushExact();
      } else if (d == first::Decided::kNonrealRow) {
        out.pushNonrealRow();
      } else {
        Verdict v;
        v.outcome = Outcome::kAcceptable;
        v.reason = d == first::Decided::kNearTieKeys ? "near-tie-keys" : "near-tie-order";
        v.token = t;
        out.push_back(std::move(v));
      }
      return false;
    }
  }
  Verdict v = family ? judgeFamilyToken(c.row(t), *family, c.k, tokenIds, tokenGates, contract,
                                        config, levels)
                     : judgeToken(c.row(t), c.k, tokenIds, tokenGates, contract, config, levels);
  v.token = t;
  const bool violating = v.outcome == Outcome::kViolation;
  out.push_back(std::move(v));
  return violating;
}

// Tokens [begin, end) of the case, in order, up to the first violation (true): at a small
// v1 row the batched first level first, then judgeOne for the tokens it left.
bool judgeRange(const Case& c, int32_t begin, int32_t end, const Family* family,
                std::span<const int32_t> ids, std::span<const float> gates,
                const Contract& contract, const VerdictConfig& config, LevelCounters& levels,
                TokenVerdicts& out) {
  thread_local std::vector<uint8_t> decided;
  const bool batch = config.firstLevel && !family && c.experts <= first::kBatchExperts;
  decided.assign(batch ? static_cast<size_t>(end - begin) : 0, 0);
  if (batch) first::decideTokensBatch(c, begin, end, ids, gates, contract, config, decided);
  for (int32_t t = begin; t < end; ++t) {
    if (batch && decided[static_cast<size_t>(t - begin)]) {
      ++levels.firstLevel;
      out.pushExact();
      continue;
    }
    if (judgeOne(c, t, family, ids, gates, contract, config, levels, out)) return true;
  }
  return false;
}

void addLevels(LevelCounters& to, const LevelCounters& from) {
  to.firstLevel += from.firstLevel;
  to.selectionFloat += from.selectionFloat;
  to.selectionDouble += from.selectionDouble;
  to.selectionCertified += from.selectionCertified;
  to.selectionUndecided += from.selectionUndecided;
  to.gateDouble += from.gateDouble;
  to.gateCertified += from.gateCertified;
  to.gateUndecided += from.gateUndecided;
}

// Tokens per chunk of a case judged on several threads: chunks are judged in any order,
// each up to its first violation, and joined in token order up to the first violation, so
// that verdicts and counters are those of one thread.
constexpr int32_t kChunkTokens = 64;

}  // namespace

CaseResult judgeRecorded(const Case& c, std::span<const int32_t> ids, std::span<const float> gates,
                         const Contract& contract, const VerdictConfig& config,
                         LevelCounters& levels) {
  CaseResult r;
  r.output.ids.assign(ids.begin(), ids.end());
  r.output.gates.assign(gates.begin(), gates.end());
  // A v1 case judged for a v2 router: the family v1's probabilities mode is (Router::route).
  const Family mixtral;
  const Family* family = c.family ? &*c.family : contract.v2() ? &mixtral : nullptr;
  if (config.jobs <= 1) {
    // One thread: straight into the result, up to the first violation.
    r.tokens.reserve(static_cast<size_t>(c.tokens));
    if (judgeRange(c, 0, c.tokens, family, ids, gates, contract, config, levels, r.tokens)) {
      r.violation = r.tokens.back();
    }
    return r;
  }
  const auto chunks = static_cast<size_t>((c.tokens + kChunkTokens - 1) / kChunkTokens);
  std::vector<TokenVerdicts> judged;
  judged.reserve(chunks);
  for (size_t ch = 0; ch < chunks; ++ch) judged.emplace_back(ch * kChunkTokens);
  std::vector<LevelCounters> counted(chunks);
  std::vector<uint8_t> violating(chunks, 0);
  std::atomic<size_t> firstViolating{chunks};
  std::vector<std::exception_ptr> failed(chunks);
  runChunks(config.jobs, chunks, [&](size_t ch) {
    if (ch > firstViolating.load()) return;  // past a violation: never joined
    const auto begin = static_cast<int32_t>(ch) * kChunkTokens;
    const int32_t end = std::min(c.tokens, begin + kChunkTokens);
    try {
      if (judgeRange(c, begin, end, family, ids, gates, contract, config, counted[ch],
                     judged[ch])) {
        violating[ch] = 1;
        size_t seen = firstViolating.load();
        while (ch < seen && !firstViolating.compare_exchange_weak(seen, ch)) {
        }
      }
    } catch (...) {
      failed[ch] = std::current_exception();
    }
  });
  r.tokens.reserve(static_cast<size_t>(c.tokens));
  for (size_t ch = 0; ch < chunks; ++ch) {
    if (failed[ch]) std::rethrow_exception(failed[ch]);
    addLevels(levels, counted[ch]);
    r.tokens.append(std::move(judged[ch]));
    if (violating[ch]) {
      r.violation = r.tokens.back();
      break;
    }
  }
  return r;
}

namespace {

// The first slot where a sub-batch run disagrees bit for bit with the full-batch run.
std::optional<Verdict> compareBits(const RouteOutput& full, const RouteOutput& part,
                                   int32_t firstToken, int32_t k, const std::string& how) {
  if (part.fault) {  // the rerun itself crashed, hung or wrote astray
    Verdict v;
    v.outcome = Outcome::kViolation;
    v.kind = part.fault->kind;
    v.tag = part.fault->tag;
    v.certificate = fmt::format("{} (in the rerun {})", part.fault->detail, how);
    return v;
  }
  if (part.abstained) return std::nullopt;  // a refusal is not a difference
  for (size_t s = 0; s < part.ids.size(); ++s) {
    const size_t f = static_cast<size_t>(firstToken) * k + s;
    if (part.ids[s] != full.ids[f] || bitsOf(part.gates[s]) != bitsOf(full.gates[f])) {
      Verdict v;
      v.outcome = Outcome::kViolation;
      v.kind = ViolationKind::kBatchVariance;
      v.token = firstToken + static_cast<int32_t>(s / k);
      v.certificate = fmt::format(
          "token {} slot {}: in the whole batch id {} gate {} ({}), {}: id {} gate {} ({}); "
          "the contract claims batch invariance (same bits)",
          v.token, s % k, full.ids[f], decimal32(full.gates[f]), hex32(full.gates[f]), how,
          part.ids[s], decimal32(part.gates[s]), hex32(part.gates[s]));
      return v;
    }
  }
  return std::nullopt;
}

// One rerun per case, chosen by the case's variant byte (so an input always reruns the same
// way and reproduces): the token at the split point alone, the batch split in two at
// c.split, or the whole batch with another thread count. Over a campaign all three come up
// evenly; one rerun instead of three keeps an exec about twice as cheap.
std::optional<Verdict> checkBatchInvariance(const Router& router, const Case& c,
                                            const RouteOutput& full) {
  if (c.tokens == 0) return std::nullopt;  // nothing to split or rerun
  const size_t E = static_cast<size_t>(c.experts);
  auto runRange = [&](int32_t first, int32_t count, int32_t threads) {
    return router.route(count, c.experts, c.k,
                        std::span<const float>(c.logits).subspan(first * E, count * E), threads,
                        c.family ? &*c.family : nullptr);
  };
  int mode = (c.variant >> 4) % 3;
  if (mode == 1 && !(c.split > 0 && c.split < c.tokens)) mode = 0;
  if (mode == 0 && c.tokens == 1) mode = 2;
  if (mode == 0) {
    const int32_t alone = c.split % c.tokens;
    return compareBits(full, runRange(alone, 1, c.threads), alone, c.k, "alone");
  }
  if (mode == 1) {
    const std::string how = fmt::format("in the batch split at token {}", c.split);
    if (auto v = compareBits(full, runRange(0, c.split, c.threads), 0, c.k, how)) return v;
    return compareBits(full, runRange(c.split, c.tokens - c.split, c.threads), c.split, c.k, how);
  }
  const int32_t otherThreads = c.threads == 1 ? 2 : 1;
  return compareBits(full, runRange(0, c.tokens, otherThreads), 0, c.k,
                     fmt::format("with {} threads instead of {}", otherThreads, c.threads));
}

// The experiment behind a named gate cause: the violating token alone, rerun with the one
// parameter the cause names varied. Numbers can fit a cause by coincidence (gates E times
// too large look like a scale applied twice when the scale is E; an additive epsilon like a
// bias when the bias is zero), the router's behaviour under the change cannot.
void confirmGateCause(const Router& router, const Case& c, CaseResult& r,
                      const VerdictConfig& config, LevelCounters& levels) {
  Verdict& v = *r.violation;
  if (!c.family || !isGateCause(v.kind) || v.cause == "renorm-set") return;
  if (v.token < 0 || v.token >= c.tokens) return;
  Case one = c;
  one.tokens = 1;
  one.split = 0;
  const auto row = c.row(v.token);
  one.logits.assign(row.begin(), row.end());
  Family& f = *one.family;
  std::string varied;
  // The cause holds when the rerun is right (bias, flag) or shows the same cause (scale).
  bool sameCauseAgain = false;
  if (v.cause == "bias") {
    std::fill(f.bias.begin(), f.bias.end(), 0.0f);
    varied = "with the bias set to zero";
  } else if (v.cause == "scale") {
    for (float s : {3.0f, 0.375f, 5.0f}) {
      if (s != f.scale && s != static_cast<float>(c.experts) && s * s != f.scale) {
        f.scale = s;
        break;
      }
    }
    varied = fmt::format("at scale {}", decimal32(f.scale));
    sameCauseAgain = true;
  } else if (v.cause == "renorm-flag") {
    f.renormalize = 1 - f.renormalize;
    varied = fmt::format("with renormalize {}", f.renormalize);
  } else {
    return;
  }
  auto rerun = [&](const Case& x, std::string& said) -> std::optional<CaseResult> {
    RouteOutput out = router.route(x.tokens, x.experts, x.k, x.logits, x.threads, &*x.family);
    if (out.fault || out.abstained) {
      said = fmt::format("the router did not route the rerun ({})",
                         out.fault ? out.fault->detail : out.abstainReason);
      return std::nullopt;
    }
    return judgeRecorded(x, out.ids, out.gates, router.contract(), config, levels);
  };
  auto gateWrong = [](const CaseResult& x) {
    return x.violation &&
           (x.violation->kind == ViolationKind::kGateError || isGateCause(x.violation->kind));
  };
  std::string why;
  const auto again = rerun(one, why);
  if (!again) {
    causeNotConfirmed(v, fmt::format("{}: {}", varied, why));
    return;
  }
  bool followed =
      sameCauseAgain ? again->violation && again->violation->kind == v.kind : !gateWrong(*again);
  if (followed && v.cause == "renorm-flag") {
    // At one kept expert, or logits where binary32 absorbs a term, another bug can give
    // exactly the renormalised (or raw) gates; a router that mistakes the flag does so at
    // ordinary logits too: the row shifted so that its largest logit is 0.
    Case shifted = one;
    shifted.family->renormalize = c.family->renormalize;
    float m = -INFINITY;
    for (float x : shifted.logits) m = std::max(m, x);
    for (float& x : shifted.logits) x -= m;
    const auto atZero = rerun(shifted, why);
    followed = atZero && atZero->violation && atZero->violation->kind == v.kind;
    if (!followed) {
      causeNotConfirmed(
          v, fmt::format("the same row shifted to a largest logit of 0 {}",
                         !atZero ? why
                         : atZero->violation
                             ? fmt::format("is judged {}", kindName(atZero->violation->kind))
                             : std::string("is routed right")));
      return;
    }
  }
  if (followed) {
    v.certificate += fmt::format(" [confirmed: the rerun {} {}]", varied,
                                 sameCauseAgain ? "shows the same cause" : "has the spec's gates");
    return;
  }
  causeNotConfirmed(v, fmt::format("the rerun {} {}", varied,
                                   again->violation ? fmt::format("is judged {}",
                                                                  kindName(again->violation->kind))
                                                    : std::string("has no gate error")));
}

}  // namespace

// Parameters outside the domain: MOE_ROUTE_EBADPARAMS and the outputs as they were given
// (the sentinels Router::route fills them with), or a finding.
std::optional<Verdict> checkInvalidParams(const Case& c, const RouteOutput& out,
                                          const std::string& why) {
  Verdict v;
  v.outcome = Outcome::kViolation;
  if (out.status == MOE_ROUTE_OK) {
    v.kind = ViolationKind::kBadParamsAccepted;
    v.certificate = fmt::format(
        "routed parameters outside the domain ({}: {}), returning 0; route_abi.h asks for "
        "MOE_ROUTE_EBADPARAMS (6) with nothing written",
        familyText(*c.family), why);
    return v;
  }
  if (out.status != MOE_ROUTE_EBADPARAMS) {
    // Refused, but not as the ABI says (EUNSUPPORTED before the parameter checks): a caller
    // cannot tell a bad call from a family the kernel lacks.
    v.kind = ViolationKind::kBadParamsWrongStatus;
    v.tag = fmt::format("{}", out.status);
    v.certificate = fmt::format(
        "returned {}{} for parameters outside the domain ({}: {}); route_abi.h asks for "
        "MOE_ROUTE_EBADPARAMS (6), the domain checked before MOE_ROUTE_EUNSUPPORTED",
        out.status, out.status == MOE_ROUTE_EUNSUPPORTED ? " (MOE_ROUTE_EUNSUPPORTED)" : "",
        familyText(*c.family), why);
    return v;
  }
  for (size_t s = 0; s < out.ids.size(); ++s) {
    if (out.ids[s] != -2 || bitsOf(out.gates[s]) != 0x7fa00000u) {
      v.kind = ViolationKind::kBadParamsWritten;
      v.certificate = fmt::format(
          "returned MOE_ROUTE_EBADPARAMS ({}: {}) but wrote slot {} (token {}): id {} gate {}; "
          "route_abi.h: nothing written",
          familyText(*c.family), why, s, c.k > 0 ? s / c.k : 0, out.ids[s], hex32(out.gates[s]));
      v.token = c.k > 0 ? static_cast<int32_t>(s / c.k) : 0;
      return v;
    }
  }
  return std::nullopt;
}

CaseResult judgeCase(const Router& router, const Case& c, const VerdictConfig& config,
                     LevelCounters& levels) {
  RouteOutput out =
      router.route(c.tokens, c.experts, c.k, c.logits, c.threads, c.family ? &*c.family : nullptr);
  if (!out.fault && c.family && router.contract().v2() &&
      !(out.abstained && out.abstainReason == "not available on this CPU")) {
    const std::string why = familyInvalidReason(*c.family, c.experts);
    if (!why.empty()) {
      CaseResult r;
      r.violation = checkInvalidParams(c, out, why);
      if (!r.violation) {
        Verdict ok;
        ok.outcome = Outcome::kExact;
        r.tokens.push_back(ok);
      }
      r.output = std::move(out);
      return r;
    }
    if (out.status == MOE_ROUTE_EBADPARAMS) {
      out.abstained = false;
      out.fault = RouteFault{ViolationKind::kBadStatus,
                             fmt::format("returned MOE_ROUTE_EBADPARAMS (6) for valid parameters "
                                         "({})",
                                         familyText(*c.family)),
                             "status-6"};
    }
  }
  if (out.fault) {
    // The call itself failed: the finding is the case, there is no output to judge.
    CaseResult r;
    Verdict v;
    v.outcome = Outcome::kViolation;
    v.kind = out.fault->kind;
    v.tag = out.fault->tag;
    v.certificate =
        fmt::format("{} (E = {}, k = {}, T = {})", out.fault->detail, c.experts, c.k, c.tokens);
    r.violation = std::move(v);
    r.output = std::move(out);
    return r;
  }
  if (out.abstained) {
    CaseResult r;
    r.abstained = true;
    r.abstainReason = out.abstainReason;
    r.output = std::move(out);
    return r;
  }
  CaseResult r = judgeRecorded(c, out.ids, out.gates, router.contract(), config, levels);
  r.output = std::move(out);
  if (r.violation) confirmGateCause(router, c, r, config, levels);
  if (!r.violation && config.checkBatchInvariance && router.contract().batchInvariant) {
    if (auto v = checkBatchInvariance(router, c, r.output)) r.violation = v;
  }
  return r;
}

}  // namespace moe::fuzz
