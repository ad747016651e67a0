// explainVectors: one case told for a person (the `moe-oracle explain` command), each
// token by describeToken, the table the violation report prints too.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/token_text.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

namespace {

void explainVerdict(fmt::memory_buffer& out, const Verdict& v, const std::string& who) {
  fmt::format_to(std::back_inserter(out), "verdict for {}: {}", who, outcomeName(v.outcome));
  if (v.outcome == Outcome::kAcceptable) {
    fmt::format_to(std::back_inserter(out), " ({}, worst near-tie margin {:.3g} of the budget)",
                   v.reason, v.margin);
  }
  if (v.outcome == Outcome::kViolation) {
    fmt::format_to(std::back_inserter(out), " [{}]\n  why: {}", kindName(v.kind), v.certificate);
  }
  fmt::format_to(std::back_inserter(out), "\n");
}

}  // namespace

std::string explainVectors(const nlohmann::json& file, const Router* impl,
                           const VerdictConfig& config, int* unexplained) {
  checkVectorLayout(file);
  fmt::memory_buffer out;
  std::unique_ptr<Router> spec = makeSpec32Router();
  Judge judge(config);
  for (const auto& g : file["testGroups"]) {
    const std::string type = g["type"].get<std::string>();
    for (const auto& t : g["tests"]) {
      const int64_t tcId = t.value("tcId", int64_t{0});
      fmt::format_to(std::back_inserter(out), "--- {} tcId {} ---\n", type, tcId);
      try {
        if (type == "RoutingTest") {
          RoutingVector v = parseRoutingTest(t);
          Case c;
          c.experts = static_cast<int32_t>(v.logits.size());
          c.k = v.k;
          c.logits = v.logits;
          c.allowNaN = true;
          const Router& who = impl ? *impl : *spec;
          CaseResult r = judge.run(who, c);
          if (r.abstained) {
            fmt::format_to(std::back_inserter(out), "{}",
                           describeToken(c.row(0), c.family, c.k, {}, {}));
            fmt::format_to(std::back_inserter(out), "{} abstained: {}\n", who.name(),
                           r.abstainReason);
            continue;
          }
          fmt::format_to(std::back_inserter(out), "{}",
                         describeToken(c.row(0), c.family, c.k, r.output.ids, r.output.gates));
          explainVerdict(out, r.violation ? *r.violation : r.tokens.at(0), who.name());
        } else if (type == "RouterReproducer") {
          Case c = caseOfReproducer(t);
          // Judged as found (the run's tie order and budgets), unless a flag says otherwise.
          std::vector<std::string> said;
          Judge asFound(recordedConfig(t, config, &said));
          for (const auto& line : said) {
            fmt::format_to(std::back_inserter(out), "judged with {}\n", line);
          }
          Contract contract =
              t.contains("contract") ? parseContractJSON(t["contract"]) : Contract{};
          std::vector<int32_t> ids;
          std::vector<float> gates;
          std::string who;
          CaseResult r;
          if (impl) {
            // Rerun the router asked for on the case, and explain what it does now.
            r = asFound.run(*impl, c);
            if (r.abstained) {
              fmt::format_to(std::back_inserter(out), "{} abstained: {}\n", impl->name(),
                             r.abstainReason);
              continue;
            }
            ids = r.output.ids;
            gates = r.output.gates;
            who = impl->name() + " (rerun now)";
          } else if (const auto recorded = kindFromName(t.value("kind", std::string()));
                     recorded && isCallFault(*recorded)) {
            // A crash, hang or stray write left no output to tell: say what was found.
            fmt::format_to(std::back_inserter(out),
                           "implementation {}: {} on this case (E = {}, k = {}, T = {}): {}\n"
                           "rerun it with --impl to see it again\n",
                           t.value("impl", std::string("?")), kindName(*recorded), c.experts, c.k,
                           c.tokens, t.value("certificate", std::string()));
            continue;
          } else {
            ids = t.at("ids").get<std::vector<int32_t>>();
            for (const auto& x : t.at("gates")) gates.push_back(parseHex32(x.get<std::string>()));
            if (ids.size() != static_cast<size_t>(c.tokens) * c.k || gates.size() != ids.size()) {
              throw std::invalid_argument("ids/gates must hold tokens * k entries");
            }
            r = asFound.recorded(c, ids, gates, contract);
            keepRecordedDowngrade(r, t.value("kind", std::string()));
            who = t.value("impl", std::string("?")) + " (recorded output)";
          }
          int32_t token = t.value("token", 0);
          if (r.violation) token = r.violation->token;
          token = std::clamp(token, 0, c.tokens - 1);
          const size_t k = static_cast<size_t>(c.k);
          if (c.tokens == 0) {
            fmt::format_to(std::back_inserter(out), "{}: no tokens in this case\n", who);
            continue;
          }
          fmt::format_to(std::back_inserter(out), "implementation {}, token {} of {}:\n", who,
                         token, c.tokens);
          fmt::format_to(std::back_inserter(out), "{}",
                         describeToken(c.row(token), c.family, c.k,
                                       std::span<const int32_t>(ids).subspan(token * k, k),
                                       std::span<const float>(gates).subspan(token * k, k)));
          if (r.violation) {
            explainVerdict(out, *r.violation, who);
          } else if (!impl && t.value("kind", std::string()) == "batch-variance") {
            fmt::format_to(std::back_inserter(out),
                           "recorded kind batch-variance: each token alone is judged {}; the "
                           "difference shows only when the router is rerun (moe-oracle replay "
                           "--impl)\n",
                           outcomeName(r.worst()));
          } else {
            explainVerdict(out, r.tokens.at(static_cast<size_t>(token)), who);
          }
        } else {
          fmt::format_to(std::back_inserter(out), "group type {} is not read by moe-oracle\n",
                         type);
        }
      } catch (const std::exception& e) {
        fmt::format_to(std::back_inserter(out), "cannot explain: {}\n", e.what());
        if (unexplained) ++*unexplained;
      }
    }
  }
  return fmt::to_string(out);
}

}  // namespace moe::fuzz
