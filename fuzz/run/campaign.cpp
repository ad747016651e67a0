#include "moe/fuzz/campaign.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/out_dir.hpp"
#include "moe/fuzz/recipes.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/router_case.hpp"
#include "moe/fuzz/shrink.hpp"
#include "moe/fuzz/summary_parts.hpp"

namespace moe::fuzz {

namespace {

struct Band {
  const char* name;
  int64_t lo, hi;
};
constexpr Band kExpertBands[] = {{"0", 0, 0},
                                 {"1", 1, 1},
                                 {"2-8", 2, 8},
                                 {"9-64", 9, 64},
                                 {"65-256", 65, 256},
                                 {"257-1024", 257, 1024},
                                 {"1025-4096", 1025, kDrawMaxExperts}};
constexpr Band kKBands[] = {
    {"0", 0, 0}, {"1", 1, 1}, {"2-8", 2, 8}, {"9-64", 9, 64}, {"65+", 65, INT32_MAX}};
constexpr Band kTokenBands[] = {{"0", 0, 0},
                                {"1", 1, 1},
                                {"2-64", 2, 64},
                                {"65-4095", 65, 4095},
                                {"4096-65536", 4096, kDrawMaxTokens}};

template <size_t N>
const char* bandOf(const Band (&bands)[N], int64_t v) {
  for (const Band& b : bands) {
    if (b.lo <= v && v <= b.hi) return b.name;
  }
  return "other";
}

template <size_t N>
std::string bandText(const Band (&bands)[N], const std::map<std::string, uint64_t>& counts) {
  std::string out;
  for (const Band& b : bands) {
    auto it = counts.find(b.name);
    out += fmt::format(" {}:{}", b.name, it == counts.end() ? 0 : it->second);
  }
  return out;
}

// A token judged wrong in its batch (shrinking kept the batch: the token alone did not
// show it) is rerun alone; when it routes right there, the certificate says the output
// depends on the other tokens, the first thing to look at in the kernel.
void noteBatchDependence(Judge& judge, const Router& router, const Case& c, CaseResult& r) {
  const int32_t t = r.violation->token;
  if (!isTokenKind(r.violation->kind) || c.tokens < 2 || t < 0 || t >= c.tokens) return;
  Case alone = c;
  alone.tokens = 1;
  alone.split = 0;
  const auto row = c.row(t);
  alone.logits.assign(row.begin(), row.end());
  const CaseResult a = judge.run(router, alone);
  if (a.abstained || a.violation) return;
  r.violation->certificate += fmt::format(
      "; this row alone routes correctly (token {} rerun as a batch of one): the output "
      "depends on the other tokens of the batch",
      t);
}

// Shrinks a case's violation and describes it (not yet written), remembering the shape it
// was drawn at.
FoundViolation shrinkAndDescribe(Judge& shrinkJudge, const Router& router, Case c, CaseResult r,
                                 const CampaignOptions& options, nlohmann::json& file) {
  FoundViolation f;
  f.drawnExperts = c.experts;
  f.drawnK = c.k;
  f.drawnTokens = c.tokens;
  ShrinkLimits limits;
  limits.space = options.shapes;
  if (router.contract().v2()) limits.families = effectiveContract(router, options).families;
  shrinkViolation(shrinkJudge, router, c, r, options.shrinkSeconds, limits, options.stop);
  noteBatchDependence(shrinkJudge, router, c, r);
  f.kind = r.violation->kind;
  f.tag = r.violation->tag;
  f.shapeClass = std::string(degenerateShape(c));
  f.signature = signatureLine(router.name(), f.kind, f.tag, f.shapeClass);
  f.report = mismatchReport(router, c, r);
  f.count = 1;
  f.logits = c.logits.size();
  f.experts = c.experts;
  f.k = c.k;
  f.tokens = c.tokens;
  nlohmann::json provenance = {
      {"tool", "moe-oracle fuzz"}, {"seed", options.seed}, {"impl", router.name()}};
  file = reproducerFile(router, c, r, provenance,
                        verdictConfigJSON(options.config, effectiveContract(router, options)));
  return f;
}

// Folds a case's violation into the findings, one per distinct fault: its kind, its tag and,
// for a fault seen only on a degenerate shape, that shape's class. A new fault is shrunk and
// kept; a known one counts, and a smaller case of it replaces the kept reproducer only once
// shrunk and still smaller, so the kept reproducer is always the smallest shrunk one. A fault
// also met on a real shape is reported there: its degenerate findings fold into that one.
void addFinding(CampaignSummary& s, Judge& shrinkJudge, const Router& router, const Case& c,
                const CaseResult& r, const CampaignOptions& options) {
  const std::string_view shape = degenerateShape(c);
  auto find = [&](std::string_view cls) {
    return std::find_if(s.violations.begin(), s.violations.end(), [&](const FoundViolation& f) {
      return f.kind == r.violation->kind && f.tag == r.violation->tag && f.shapeClass == cls;
    });
  };
  if (!shape.empty() && find("") != s.violations.end()) {
    ++find("")->count;
    return;
  }
  auto same = find(shape);
  if (same != s.violations.end()) {
    ++same->count;
    if (c.logits.size() >= same->logits) return;
  }
  nlohmann::json file;
  FoundViolation f = shrinkAndDescribe(shrinkJudge, router, c, r, options, file);
  if (same != s.violations.end()) {
    // Shrinking keeps kind, tag and shape class, so the signature is the same.
    if (f.logits >= same->logits || f.signature != same->signature) return;
    f.count = same->count;
    f.drawnExperts = same->drawnExperts;  // the first draw of this fault
    f.drawnK = same->drawnK;
    f.drawnTokens = same->drawnTokens;
  }
  f.reproducer = writeReproducer(
      reproducerPath(options.outDir, router.name(), f.kind, f.tag, f.shapeClass, options.seed),
      file);
  if (same != s.violations.end()) {
    *same = std::move(f);
    return;
  }
  if (shape.empty()) {  // the degenerate findings of this fault are this one now
    for (auto it = s.violations.begin(); it != s.violations.end();) {
      if (it->kind == f.kind && it->tag == f.tag) {
        f.count += it->count;
        std::error_code ec;
        if (!it->reproducer.empty()) std::filesystem::remove(it->reproducer, ec);
        it = s.violations.erase(it);
      } else {
        ++it;
      }
    }
  }
  s.violations.push_back(std::move(f));
}

}  // namespace

Contract effectiveContract(const Router& router, const CampaignOptions& options) {
  Contract c = router.contract();
  if (options.families) c.families = *options.families;
  return c;
}

void Coverage::add(int32_t e, int32_t kk, int32_t t, int32_t judged) {
  tokens[bandOf(kTokenBands, t)] += static_cast<uint64_t>(judged);
  experts[bandOf(kExpertBands, e)] += static_cast<uint64_t>(judged);
  k[bandOf(kKBands, kk)] += static_cast<uint64_t>(judged);
  kVsExperts[kk < e ? "k<E" : kk == e ? "k=E" : "k>E"] += static_cast<uint64_t>(judged);
}

bool CampaignSummary::insufficientCoverage() const {
  return tokens < minTokens || abstained * 2 > cases;
}

int CampaignSummary::exitCode() const {
  if (!violations.empty()) return 1;
  return insufficientCoverage() ? 3 : 0;
}

CampaignSummary runCampaign(const Router& router, const CampaignOptions& options) {
  CampaignSummary s;
  s.impl = router.name();
  s.seed = options.seed;
  s.minTokens = options.minTokens;
  const Contract contract = effectiveContract(router, options);
  s.verdictConfig = verdictConfigJSON(options.config, contract);
  Judge judge(options.config);
  Judge shrinkJudge(options.config);  // shrinking's runs are not coverage
  SeededSource source(options.seed);
  CallCost cost;
  RunClock clock(options);
  auto elapsed = [&] { return clock.elapsed(); };
  while (clock.another(s.cases, &s.interrupted)) {
    // Not const: a violation shrinks it. A v2 router gets the family's cases.
    Case c = routerCase(source, contract, options.shapes);
    if (cost.fitted() && elapsed() + cost.predict(c.experts, c.k, c.tokens) > options.seconds) {
      ++s.skippedTooSlow;  // it would end past the time limit: the draw goes on
      continue;
    }
    router.setCallTimeout(cost.hangAfter(c.experts, c.k, c.tokens));
    CaseResult r = judge.run(router, c);
    ++s.cases;
    if (!r.output.fault) {
      const double budget = cost.budget(c.experts, c.k, c.tokens);
      if (r.output.seconds > budget) {
        if (r.output.seconds > s.slow.seconds) {
          s.slow = {s.slow.calls, r.output.seconds, budget, c.experts, c.k, c.tokens};
        }
        ++s.slow.calls;
      }
      cost.add(c.experts, c.k, c.tokens, r.output.seconds);
    }
    if (r.abstained) {
      ++s.abstained;
      ++s.coverage.abstainReasons[r.abstainReason];
      continue;
    }
    // Tokens judged: every token, or those up to the violating one.
    const auto judged = static_cast<int32_t>(r.tokens.size());
    s.tokens += static_cast<uint64_t>(judged);
    s.coverage.add(c.experts, c.k, c.tokens, judged);
    s.coverage.shares.add(c, r.tokens);
    if (c.family) {
      const std::string_view recipe = recipeOf(c);
      s.coverage.recipes[recipe.empty() ? "none" : std::string(recipe)] +=
          static_cast<uint64_t>(judged);
    }
    s.exact += r.tokens.plainExact();
    s.acceptable += r.tokens.plainNonrealRows();
    if (r.tokens.plainNonrealRows() > 0) {
      s.acceptableReasons["nonreal-row"] += r.tokens.plainNonrealRows();
    }
    for (const Verdict& v : r.tokens.whole()) {
      if (v.outcome == Outcome::kExact) ++s.exact;
      if (v.outcome == Outcome::kAcceptable) {
        ++s.acceptable;
        ++s.acceptableReasons[v.reason];
      }
      if (v.outcome == Outcome::kViolation) ++s.violation;
    }
    if (r.violation) {
      ++s.violationCases;
      addFinding(s, shrinkJudge, router, c, r, options);
      if (!options.keepGoing) break;
    }
    if (clock.progressDue()) {
      clock.progress(
          fmt::format("moe-oracle fuzz {}: {:.0f} s, {} cases, {} tokens, {:.0f} cases/s",
                      router.name(), elapsed(), s.cases, s.tokens, s.cases / elapsed()));
    }
  }
  clock.finish();
  s.seconds = elapsed();
  s.levels = judge.levels();
  s.medianCallSeconds = cost.medianSeconds();
  return s;
}

nlohmann::json summaryJSON(const CampaignSummary& s) {
  nlohmann::json j = summaryHeadJSON(s);
  j["cases_per_s"] = s.casesPerSecond();
  j["verdicts"] = {{"exact", s.exact}, {"acceptable", s.acceptable}, {"violation", s.violation}};
  j["acceptable_reasons"] = nlohmann::json::object();
  for (const auto& [reason, n] : s.acceptableReasons) j["acceptable_reasons"][reason] = n;
  const LevelCounters& l = s.levels;
  j["levels"] = {{"first_level", l.firstLevel},
                 {"selection_float", l.selectionFloat},
                 {"selection_double", l.selectionDouble},
                 {"selection_certified", l.selectionCertified},
                 {"selection_undecided", l.selectionUndecided},
                 {"gate_double", l.gateDouble},
                 {"gate_certified", l.gateCertified},
                 {"gate_undecided", l.gateUndecided}};
  const Coverage& cov = s.coverage;
  j["coverage"].update({{"experts", cov.experts},
                        {"k", cov.k},
                        {"tokens", cov.tokens},
                        {"k_vs_experts", cov.kVsExperts},
                        {"abstained", s.abstained},
                        {"abstain_reasons", cov.abstainReasons}});
  j["coverage"]["shares"] = sharesJSON(cov.shares);
  j["coverage"]["share_tokens"] = shareTokensJSON(cov.shares);
  j["coverage"]["degenerate_cases"] = cov.shares.degenerateCases;
  if (s.verdictConfig.is_object() && s.verdictConfig.value("abi", "") == kAbiV2) {
    j["coverage"]["recipes"] =
        cov.recipes.empty() ? nlohmann::json::object() : nlohmann::json(cov.recipes);
  }
  for (const char* key : {"experts", "k", "tokens", "k_vs_experts", "abstain_reasons"}) {
    if (j["coverage"][key].is_null()) j["coverage"][key] = nlohmann::json::object();
  }
  j["verdict_config"] = s.verdictConfig;
  j["slow"] = {
      {"calls", s.slow.calls},
      {"slowest_seconds", s.slow.seconds},
      {"slowest_budget", s.slow.budget},
      {"slowest_shape", {{"experts", s.slow.experts}, {"k", s.slow.k}, {"tokens", s.slow.tokens}}}};
  j["skipped_too_slow"] = s.skippedTooSlow;
  j["median_call_seconds"] = s.medianCallSeconds;
  j["violations"] = nlohmann::json::array();
  for (const auto& v : s.violations) {
    nlohmann::json shape = {
        {"experts", v.experts},
        {"k", v.k},
        {"tokens", v.tokens},
        {"shrunk", v.shrunk()},
        {"drawn", {{"experts", v.drawnExperts}, {"k", v.drawnK}, {"tokens", v.drawnTokens}}}};
    if (!v.shapeClass.empty()) shape["degenerate"] = v.shapeClass;
    j["violations"].push_back(
        findingJSON(v.signature, v.kind, v.tag, v.count, v.reproducer, std::move(shape)));
  }
  return j;
}

std::string summaryText(const CampaignSummary& s) {
  std::string reasons;
  for (const auto& [reason, n] : s.acceptableReasons) reasons += fmt::format(" {}={}", reason, n);
  const LevelCounters& l = s.levels;
  const Coverage& cov = s.coverage;
  std::string out = fmt::format(
      "moe-oracle fuzz {}: seed {}, {:.1f} s, {} cases ({} tokens, {} abstained), {:.0f} cases/s\n"
      "verdicts (tokens judged): exact {}, acceptable {}{}, violation {} (cases with a "
      "violation: {})\n"
      "decided at: first level {} tokens; the rest: selection float {} / double {} / certified "
      "{} / undecided {}; gates double {} / certified {} / undecided {}\n"
      "coverage (tokens judged): E{}; k{}; T{}\n",
      s.impl, s.seed, s.seconds, s.cases, s.tokens, s.abstained, s.casesPerSecond(), s.exact,
      s.acceptable, reasons.empty() ? "" : " (" + reasons.substr(1) + ")", s.violation,
      s.violationCases, l.firstLevel, l.selectionFloat, l.selectionDouble, l.selectionCertified,
      l.selectionUndecided, l.gateDouble, l.gateCertified, l.gateUndecided,
      bandText(kExpertBands, cov.experts), bandText(kKBands, cov.k),
      bandText(kTokenBands, cov.tokens));
  out += fmt::format("shares of tokens judged: {}\n", sharesText(cov.shares));
  if (!cov.recipes.empty()) {
    std::string recipes;
    for (const auto& [name, n] : cov.recipes) recipes += fmt::format(" {}:{}", name, n);
    out += fmt::format("coverage by model recipe (tokens judged):{}\n", recipes);
  }
  if (s.verdictConfig.is_object()) {
    out += fmt::format("judged with: {}\n", verdictConfigText(s.verdictConfig));
  }
  if (s.abstained > 0) {
    std::string why;
    for (const auto& [reason, n] : cov.abstainReasons) why += fmt::format(", {} ({})", reason, n);
    out += fmt::format("abstained (not judged): {} cases{}\n", s.abstained, why);
  }
  for (const auto& v : s.violations) {
    std::string note;
    if (v.shrunk()) {
      note = fmt::format(", shrunk from E = {}, k = {}, T = {}", v.drawnExperts, v.drawnK,
                         v.drawnTokens);
    }
    if (!v.shapeClass.empty()) {
      const bool elsewhere = std::any_of(s.violations.begin(), s.violations.end(), [&](auto& o) {
        return o.kind == v.kind && o.tag == v.tag && o.shapeClass.empty();
      });
      note += fmt::format("; {} {}", elsewhere ? "also on" : "in this run only on",
                          degenerateShapeText(v.shapeClass));
    }
    out += fmt::format(
        "violation {} ({}): {} case(s); smallest reproducer {} (E = {}, k = {}, T = {}{})\n",
        kindName(v.kind), v.signature, v.count, v.reproducer.empty() ? "(not saved)" : v.reproducer,
        v.experts, v.k, v.tokens, note);
  }
  if (s.slow.calls > 0) {
    out += fmt::format(
        "slow (a note, not a violation): {} call(s) past their budget; the slowest took {:.3g} s "
        "at E = {}, k = {}, T = {} against a budget of {:.3g} s (ten times what the router's "
        "own cost on this run predicts)\n",
        s.slow.calls, s.slow.seconds, s.slow.experts, s.slow.k, s.slow.tokens, s.slow.budget);
  }
  if (s.skippedTooSlow > 0) {
    out += fmt::format("not run: {} drawn case(s) predicted to end past the time limit\n",
                       s.skippedTooSlow);
  }
  if (s.violations.empty() && s.insufficientCoverage()) {
    out += insufficientCoverageLine(s.tokens, s.minTokens, s.abstained, s.cases);
    if (s.tokens < s.minTokens && s.medianCallSeconds > 0) {
      out += fmt::format(
          "the router's calls took {:.3g} s each (median): a longer --seconds "
          "judges more\n",
          s.medianCallSeconds);
    }
  }
  out += interruptedLine(s.interrupted);
  return out;
}

}  // namespace moe::fuzz
