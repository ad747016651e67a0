#include "moe/fuzz/campaign.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "moe/fuzz/case.hpp"
#include "moe/fuzz/report.hpp"

namespace moe::fuzz {

namespace {

std::string writeReproducer(const Router& router, const Case& c, const CaseResult& r,
                            const CampaignOptions& options) {
  std::filesystem::create_directories(options.outDir);
  std::string stem = fmt::format("{}-{}-E{}-k{}-seed{}", router.name(), r.violation->kind,
                                 c.experts, c.k, options.seed);
  for (char& ch : stem) {
    if (!(std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_')) ch = '_';
  }
  std::filesystem::path path = std::filesystem::path(options.outDir) / (stem + ".json");
  nlohmann::json provenance = {
      {"tool", "moe-oracle fuzz"}, {"seed", options.seed}, {"impl", router.name()}};
  std::ofstream out(path);
  out << reproducerFile(router, c, r, provenance).dump(2) << "\n";
  if (!out) throw std::runtime_error(fmt::format("cannot write reproducer {}", path.string()));
  return path.string();
}

// A violation of one token that the token alone reproduces (same kind) is reported on that
// one-token case: a small reproducer that says exactly what broke.
void shrinkToToken(const Router& router, const CampaignOptions& options, Case& c, CaseResult& r,
                   LevelCounters& levels) {
  if (c.tokens == 1 || r.violation->token < 0 || r.violation->kind == "batch-variance") return;
  Case alone = c;
  alone.tokens = 1;
  alone.split = 0;
  auto row = c.row(r.violation->token);
  alone.logits.assign(row.begin(), row.end());
  CaseResult again = judgeCase(router, alone, options.config, levels);
  if (again.violation && again.violation->kind == r.violation->kind) {
    c = std::move(alone);
    r = std::move(again);
  }
}

}  // namespace

CampaignSummary runCampaign(const Router& router, const CampaignOptions& options) {
  using Clock = std::chrono::steady_clock;
  CampaignSummary s;
  s.impl = router.name();
  s.seed = options.seed;
  SeededSource source(options.seed);
  const auto start = Clock::now();
  auto lastProgress = start;
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start).count(); };
  while (elapsed() < options.seconds && (options.maxCases == 0 || s.cases < options.maxCases)) {
    Case c = decodeCase(source);  // not const: a violation shrinks it
    CaseResult r = judgeCase(router, c, options.config, s.levels);
    ++s.cases;
    if (r.abstained) {
      ++s.abstained;
      continue;
    }
    s.tokens += static_cast<uint64_t>(c.tokens);
    for (const Verdict& v : r.tokens) {
      if (v.outcome == Outcome::kExact) ++s.exact;
      if (v.outcome == Outcome::kAcceptable) {
        ++s.acceptable;
        ++s.acceptableReasons[v.reason];
      }
    }
    if (r.violation) {
      ++s.violation;
      shrinkToToken(router, options, c, r, s.levels);
      FoundViolation f;
      f.kind = r.violation->kind;
      f.signature = signatureLine(router.name(), f.kind, c.experts, c.k);
      f.report = mismatchReport(router, c, r);
      f.reproducer = writeReproducer(router, c, r, options);
      s.violations.push_back(std::move(f));
      break;  // the first violation ends the campaign (issue 4)
    }
    if (options.progress && Clock::now() - lastProgress > std::chrono::seconds(1)) {
      lastProgress = Clock::now();
      std::fprintf(stderr, "\rmoe-oracle fuzz %s: %.0f s, %llu cases, %llu tokens, %.0f cases/s ",
                   router.name().c_str(), elapsed(), static_cast<unsigned long long>(s.cases),
                   static_cast<unsigned long long>(s.tokens), s.cases / elapsed());
    }
  }
  if (options.progress) std::fprintf(stderr, "\n");
  s.seconds = elapsed();
  return s;
}

nlohmann::json summaryJSON(const CampaignSummary& s) {
  nlohmann::json j;
  j["impl"] = s.impl;
  j["seed"] = s.seed;
  j["seconds"] = s.seconds;
  j["cases"] = s.cases;
  j["tokens"] = s.tokens;
  j["abstained"] = s.abstained;
  j["cases_per_s"] = s.casesPerSecond();
  j["verdicts"] = {{"exact", s.exact}, {"acceptable", s.acceptable}, {"violation", s.violation}};
  j["acceptable_reasons"] = nlohmann::json::object();
  for (const auto& [reason, n] : s.acceptableReasons) j["acceptable_reasons"][reason] = n;
  const LevelCounters& l = s.levels;
  j["levels"] = {{"selection_float", l.selectionFloat},
                 {"selection_double", l.selectionDouble},
                 {"selection_certified", l.selectionCertified},
                 {"selection_undecided", l.selectionUndecided},
                 {"gate_double", l.gateDouble},
                 {"gate_certified", l.gateCertified},
                 {"gate_undecided", l.gateUndecided}};
  j["violations"] = nlohmann::json::array();
  for (const auto& v : s.violations) {
    j["violations"].push_back(
        {{"signature", v.signature}, {"kind", v.kind}, {"reproducer", v.reproducer}});
  }
  return j;
}

std::string summaryText(const CampaignSummary& s) {
  std::string reasons;
  for (const auto& [reason, n] : s.acceptableReasons) reasons += fmt::format(" {}={}", reason, n);
  const LevelCounters& l = s.levels;
  return fmt::format(
      "moe-oracle fuzz {}: seed {}, {:.1f} s, {} cases ({} tokens, {} abstained), {:.0f} cases/s\n"
      "verdicts (per token): exact {}, acceptable {}{}, violation {}\n"
      "decided at: selection float {} / double {} / certified {} / undecided {}; gates double "
      "{} / certified {} / undecided {}\n",
      s.impl, s.seed, s.seconds, s.cases, s.tokens, s.abstained, s.casesPerSecond(), s.exact,
      s.acceptable, reasons.empty() ? "" : " (" + reasons.substr(1) + ")", s.violation,
      l.selectionFloat, l.selectionDouble, l.selectionCertified, l.selectionUndecided, l.gateDouble,
      l.gateCertified, l.gateUndecided);
}

}  // namespace moe::fuzz
