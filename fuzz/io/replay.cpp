// replayVectors: golden vectors against the oracle and routers; reproducers re-judged.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "moe/fuzz/float_bits.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/vectors.hpp"
#include "moe/oracle/routing.hpp"
#include "moe/oracle/softmax.hpp"

namespace moe::fuzz {

namespace {

std::string bitsDiff(const std::vector<float>& want, const std::vector<float>& got) {
  for (size_t i = 0; i < want.size() && i < got.size(); ++i) {
    if (bitsOf(want[i]) != bitsOf(got[i])) {
      return fmt::format("index {}: expected {} got {}", i, hex32(want[i]), hex32(got[i]));
    }
  }
  return want.size() == got.size() ? "" : "lengths differ";
}

// The oracle's answer for one RoutingTest; returns "" when it agrees.
std::string checkRoutingAgainstOracle(const RoutingVector& v) {
  std::span<const float> x(v.logits);
  const auto r = oracle::ranks(x);
  if (v.ranks && std::vector<int64_t>(r.begin(), r.end()) != *v.ranks) {
    return "ranks differ from the oracle's";
  }
  const auto kept = oracle::keptExperts(static_cast<size_t>(v.k), x);
  if (v.keptExperts && std::vector<int64_t>(kept.begin(), kept.end()) != *v.keptExperts) {
    return "keptExperts differ from the oracle's";
  }
  if (v.exps32) {
    if (v.exps32->size() != v.logits.size()) return "exps32 has the wrong length";
    size_t next = 0;
    auto supplied = [&](float) { return (*v.exps32)[next++]; };
    const auto p = oracle::softmaxVecSpecWith(x, supplied);
    if (v.probs32) {
      if (auto d = bitsDiff(*v.probs32, p); !d.empty()) return "probs32: " + d;
    }
    if (v.gates32) {
      const auto g = oracle::gatesFromProbs(static_cast<size_t>(v.k), std::span<const float>(p));
      if (auto d = bitsDiff(*v.gates32, g); !d.empty()) return "gates32: " + d;
    }
  }
  return "";
}

}  // namespace

void keepRecordedDowngrade(CaseResult& r, std::string_view recordedKind) {
  if (recordedKind == kindName(ViolationKind::kGateError) && r.violation &&
      isGateCause(r.violation->kind)) {
    causeNotConfirmed(*r.violation, "a rerun of the router when it was found did not follow it");
  }
}

namespace {

void fail(ReplaySummary& out, int64_t tcId, std::string kind, std::string certificate,
          std::string line) {
  ++out.failed;
  out.failures.push_back({tcId, std::move(kind), std::move(certificate)});
  out.lines.push_back(std::move(line));
}

void replayRoutingGroup(const nlohmann::json& tests, const Router* impl, Judge& judge,
                        ReplaySummary& out) {
  for (const auto& t : tests) {
    RoutingVector v;
    try {
      v = parseRoutingTest(t);
    } catch (const std::exception& e) {
      ++out.failed;
      ++out.malformed;
      out.lines.push_back(fmt::format("RoutingTest: malformed test: {}", e.what()));
      continue;
    }
    const bool inDomain = v.result != "invalid";
    if (inDomain) {
      std::string why;
      try {
        why = checkRoutingAgainstOracle(v);
      } catch (const std::exception& e) {
        why = e.what();
      }
      if (!why.empty()) {
        fail(out, v.tcId, "oracle-mismatch", why,
             fmt::format("RoutingTest tcId {}: oracle: {}", v.tcId, why));
        continue;
      }
    }
    if (impl) {
      Case c;
      c.experts = static_cast<int32_t>(v.logits.size());
      c.k = v.k;
      c.logits = v.logits;
      CaseResult r = judge.run(*impl, c);
      if (r.violation) {
        const std::string kind(kindName(r.violation->kind));
        fail(out, v.tcId, kind, r.violation->certificate,
             fmt::format("RoutingTest tcId {}: {} violates: {}: {}", v.tcId, impl->name(), kind,
                         r.violation->certificate));
        continue;
      }
    }
    ++out.passed;
  }
}

void replayReproducerGroup(const nlohmann::json& tests, const Router* impl, const Judge& flags,
                           ReplaySummary& out) {
  const std::vector<std::string> builtins = builtinRouterNames();
  for (const auto& t : tests) {
    const int64_t tcId = t.is_object() && t.contains("tcId") && t["tcId"].is_number_integer()
                             ? t["tcId"].get<int64_t>()
                             : 0;
    // Reading the test is kept apart from judging it: a test that cannot be read is malformed
    // input (the CLI's exit 2), not a failing router (exit 1).
    Case c;
    Contract contract;
    std::string kind;
    std::vector<int32_t> ids;
    std::vector<float> gates;
    VerdictConfig config;
    std::vector<std::string> said;
    const bool hasOutput = t.is_object() && t.contains("ids") && t.contains("gates");
    try {
      c = caseOfReproducer(t);
      // Judged as found: the tie order and budgets in force when it was found, unless a
      // flag of this command says otherwise.
      config = recordedConfig(t, flags.config(), &said);
      contract = t.contains("contract") ? parseContractJSON(t["contract"]) : Contract{};
      kind = t.value("kind", std::string());
      if (hasOutput) {
        ids = t["ids"].get<std::vector<int32_t>>();
        for (const auto& g : t["gates"]) gates.push_back(parseHex32(g.get<std::string>()));
        if (ids.size() != static_cast<size_t>(c.tokens) * c.k || gates.size() != ids.size()) {
          throw std::invalid_argument("ids/gates must hold tokens * k entries");
        }
      }
    } catch (const std::exception& e) {
      ++out.failed;
      ++out.malformed;
      out.lines.push_back(
          fmt::format("RouterReproducer tcId {}: malformed test: {}", tcId, e.what()));
      continue;
    }
    for (const auto& line : said) {
      out.lines.push_back(fmt::format("RouterReproducer tcId {}: judged with {}", tcId, line));
    }
    Judge judge(config);
    try {
      // 1. The recorded output must still be judged the recorded violation.
      const auto recordedKind = kindFromName(kind);
      const bool needsRouter =
          kind == "batch-variance" || (recordedKind && isCallFault(*recordedKind));
      if (!needsRouter && hasOutput) {
        CaseResult r = judge.recorded(c, ids, gates, contract);
        keepRecordedDowngrade(r, kind);
        const std::string now =
            r.violation ? std::string(kindName(r.violation->kind)) : std::string("no violation");
        if (t.value("verdict", std::string("violation")) == "violation" && now != kind) {
          fail(out, tcId, "verdict-changed", r.violation ? r.violation->certificate : "",
               fmt::format("RouterReproducer tcId {}: recorded output was {} and is now judged {}",
                           tcId, kind, now));
          continue;
        }
      } else if (needsRouter) {
        out.lines.push_back(fmt::format(
            "RouterReproducer tcId {}: {} needs the router; recorded output not re-judged", tcId,
            kind));
      }
      // 2. The router itself, when it can be run here, must not violate.
      std::unique_ptr<Router> named;
      const Router* run = impl;
      const std::string name = t.value("impl", std::string());
      if (!run && std::find(builtins.begin(), builtins.end(), name) != builtins.end()) {
        RouterOptions o;
        if (c.family) o.abi = std::string(kAbiV2);  // a moe_route_v2 case: the router's v2
        named = openRouter(name, o);
        run = named.get();
      }
      if (run) {
        CaseResult r = judge.run(*run, c);
        if (r.violation) {
          const std::string now(kindName(r.violation->kind));
          fail(out, tcId, now, r.violation->certificate,
               fmt::format("RouterReproducer tcId {}: {} still violates: {} (token {}): {}", tcId,
                           run->name(), now, r.violation->token, r.violation->certificate));
          continue;
        }
      }
      ++out.passed;
    } catch (const std::exception& e) {
      fail(out, tcId, "error", e.what(),
           fmt::format("RouterReproducer tcId {}: {}", tcId, e.what()));
    }
  }
}

}  // namespace

ReplaySummary replayVectors(const nlohmann::json& file, const Router* impl,
                            const VerdictConfig& config) {
  ReplaySummary out;
  Judge judge(config);
  checkVectorLayout(file);
  for (const auto& g : file["testGroups"]) {
    const std::string type = g["type"].get<std::string>();
    if (type == "RoutingTest") {
      replayRoutingGroup(g["tests"], impl, judge, out);
    } else if (type == "RouterReproducer") {
      replayReproducerGroup(g["tests"], impl, judge, out);
    } else {
      out.skipped += static_cast<int>(g["tests"].size());
      out.lines.push_back(fmt::format("skipped group type {} ({} tests): not read by moe-oracle",
                                      type, g["tests"].size()));
    }
  }
  return out;
}

}  // namespace moe::fuzz
