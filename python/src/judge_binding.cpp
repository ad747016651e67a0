// moe_oracle.judge: an output the caller already has, judged by the one Judge (judgeRecorded,
// as `moe-oracle replay` judges a reproducer) and explained by the one explainer
// (explainVectors on the reproducer file of the case, as `moe-oracle explain` tells it).
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cmath>
#include <map>

#include "bindings.hpp"
#include "family.hpp"
#include "moe/fuzz/report.hpp"
#include "moe/fuzz/snippet.hpp"
#include "moe/fuzz/vectors.hpp"
#include "moe/route_abi.h"

namespace py = pybind11;

namespace moe::python {

namespace {

template <class T>
using Dense = py::array_t<T, py::array::c_style | py::array::forcecast>;

// A name and a contract for the reproducer file; there is no function to run.
class RecordedOutput final : public fuzz::Router {
 public:
  RecordedOutput(std::string name, fuzz::Contract contract)
      : Router(std::move(name), std::move(contract)) {}

 protected:
  int call(int32_t, int32_t, int32_t, const float*, int32_t*, float*, int32_t) const override {
    return MOE_ROUTE_EUNSUPPORTED;
  }
};

struct JudgeAnswer {
  std::vector<fuzz::Verdict> verdicts;  // one per token, in order
  std::string explanation;
  std::string reproducer;  // the reproducer file (JSON text) of the first violation, or ""
};

std::string cleanSummary(const std::string& name, const std::vector<fuzz::Verdict>& verdicts) {
  size_t exact = 0;
  std::map<std::string, size_t> reasons;
  for (const fuzz::Verdict& v : verdicts) {
    if (v.outcome == fuzz::Outcome::kExact) ++exact;
    if (v.outcome == fuzz::Outcome::kAcceptable) ++reasons[v.reason];
  }
  std::string why;
  size_t acceptable = 0;
  for (const auto& [reason, n] : reasons) {
    why += fmt::format("{}{} {}", why.empty() ? " (" : ", ", reason, n);
    acceptable += n;
  }
  if (!why.empty()) why += ")";
  return fmt::format(
      "{}: {} token(s) judged against the spec: exact {}, acceptable {}{}, no "
      "violation\n",
      name, verdicts.size(), exact, acceptable, why);
}

JudgeAnswer judgeArrays(const Dense<float>& logits, const Dense<int32_t>& ids,
                        const Dense<float>& gates, int32_t k, const std::string& contractJson,
                        const std::string& name, const std::optional<fuzz::Family>& family,
                        const fuzz::VerdictConfig& config) {
  if (logits.ndim() != 2 || ids.ndim() != 2 || gates.ndim() != 2) {
    throw std::invalid_argument("judge: logits, ids and gates must be 2-D [T, E], [T, k]");
  }
  fuzz::Case c;
  c.tokens = static_cast<int32_t>(logits.shape(0));
  c.experts = static_cast<int32_t>(logits.shape(1));
  c.k = k;
  if (ids.shape(0) != c.tokens || ids.shape(1) != k || gates.shape(0) != c.tokens ||
      gates.shape(1) != k) {
    throw std::invalid_argument(fmt::format("judge: ids and gates must be [{}, {}]", c.tokens, k));
  }
  c.logits.assign(logits.data(), logits.data() + logits.size());
  c.allowNaN = std::any_of(c.logits.begin(), c.logits.end(), [](float x) { return std::isnan(x); });
  c.family = family;
  const fuzz::Contract contract = fuzz::parseContract(contractJson);
  // The family each token is judged in: the case's, else for a v2 contract the one a v1
  // case runs as (Mixtral's, as judgeRecorded and Router::route take it).
  const std::optional<fuzz::Family> tokenFamily = family ? family
                                                  : contract.v2()
                                                      ? std::optional<fuzz::Family>(fuzz::Family{})
                                                      : std::nullopt;
  const std::span<const int32_t> idSpan(ids.data(), static_cast<size_t>(ids.size()));
  const std::span<const float> gateSpan(gates.data(), static_cast<size_t>(gates.size()));

  JudgeAnswer answer;
  fuzz::Judge judge(config);
  fuzz::CaseResult r = judge.recorded(c, idSpan, gateSpan, contract);
  answer.verdicts = r.tokens.all();
  // judgeRecorded stops at the first violation; the tokens after it are judged one by one
  // with the same judge, so every token has its verdict.
  const auto kk = static_cast<size_t>(k);
  fuzz::LevelCounters levels;
  for (int32_t t = static_cast<int32_t>(answer.verdicts.size()); t < c.tokens; ++t) {
    const auto tokenIds = idSpan.subspan(t * kk, kk);
    const auto tokenGates = gateSpan.subspan(t * kk, kk);
    fuzz::Verdict v = tokenFamily
                          ? fuzz::judgeFamilyToken(c.row(t), *tokenFamily, k, tokenIds, tokenGates,
                                                   contract, judge.config(), levels)
                          : judge.token(c.row(t), k, tokenIds, tokenGates, contract);
    v.token = t;
    answer.verdicts.push_back(std::move(v));
  }
  if (!r.violation) {
    answer.explanation = cleanSummary(name, answer.verdicts);
    return answer;
  }
  const RecordedOutput who(name, contract);
  const nlohmann::json file =
      fuzz::reproducerFile(who, c, r, {{"tool", "moe_oracle.judge"}, {"impl", name}},
                           fuzz::verdictConfigJSON(config, contract));
  answer.reproducer = file.dump(2);
  answer.explanation = fuzz::explainVectors(file, nullptr, config);
  return answer;
}

fuzz::VerdictConfig verdictConfig(const std::optional<std::string>& tieOrder,
                                  std::optional<double> gateFactor, std::optional<double> gateUlp,
                                  bool analyticFloor) {
  fuzz::VerdictConfig config;
  if (tieOrder) config.tieOrder = fuzz::parseTieOrder(*tieOrder, "tie_order");
  config.gateFactor = gateFactor;
  config.gateUlp = gateUlp;
  config.analyticFloor = analyticFloor;
  config.analyticFloorGiven = !analyticFloor;  // off only when asked
  return config;
}

}  // namespace

fuzz::VerdictConfig makeVerdictConfig(const py::kwargs& knobs) {
  auto get = [&](const char* key) -> py::object {
    return knobs.contains(key) ? py::object(knobs[key]) : py::object(py::none());
  };
  const py::object floor = get("analytic_floor");
  return verdictConfig(get("tie_order").cast<std::optional<std::string>>(),
                       get("gate_factor").cast<std::optional<double>>(),
                       get("gate_ulp").cast<std::optional<double>>(),
                       floor.is_none() ? true : floor.cast<bool>());
}

void bindJudge(py::module_& m) {
  py::class_<fuzz::Verdict>(m, "Verdict",
                            "One token's verdict: outcome exact / acceptable / violation, the "
                            "acceptable reason or the violation kind, and the certificate.")
      .def_readonly("token", &fuzz::Verdict::token)
      .def_property_readonly("outcome",
                             [](const fuzz::Verdict& v) { return fuzz::outcomeName(v.outcome); })
      .def_readonly("reason", &fuzz::Verdict::reason)
      .def_property_readonly("kind",
                             [](const fuzz::Verdict& v) -> std::optional<std::string> {
                               if (v.kind == fuzz::ViolationKind::kNone) return std::nullopt;
                               return std::string(fuzz::kindName(v.kind));
                             })
      .def_readonly("certificate", &fuzz::Verdict::certificate)
      .def_readonly("margin", &fuzz::Verdict::margin)
      .def("__repr__", [](const fuzz::Verdict& v) {
        const std::string detail =
            v.outcome == fuzz::Outcome::kViolation ? std::string(fuzz::kindName(v.kind)) : v.reason;
        return fmt::format("Verdict(token={}, {}{}{})", v.token, fuzz::outcomeName(v.outcome),
                           detail.empty() ? "" : ": ", detail);
      });

  py::class_<JudgeAnswer>(m, "JudgeAnswer")
      .def_readonly("verdicts", &JudgeAnswer::verdicts)
      .def_readonly("explanation", &JudgeAnswer::explanation)
      .def_readonly("reproducer", &JudgeAnswer::reproducer);

  m.def(
      "judge",
      [](const Dense<float>& logits, const Dense<int32_t>& ids, const Dense<float>& gates,
         int32_t k, const std::string& contract, const std::string& name, const py::object& family,
         const py::kwargs& knobs) {
        const fuzz::VerdictConfig config = makeVerdictConfig(knobs);
        std::optional<fuzz::Family> f;
        if (!family.is_none()) {
          const auto experts = static_cast<int32_t>(logits.ndim() == 2 ? logits.shape(1) : 0);
          f = familyFromTuple(family, experts);
          // Only valid parameters have a spec to judge against; outside the domain the
          // kernel owes MOE_ROUTE_EBADPARAMS, which an output cannot show.
          const std::string why = fuzz::familyInvalidReason(*f, experts);
          if (!why.empty()) throw std::invalid_argument("family: " + why);
        }
        py::gil_scoped_release release;  // the arrays were copied or pinned above
        return judgeArrays(logits, ids, gates, k, contract, name, f, config);
      },
      py::arg("logits"), py::arg("ids"), py::arg("gates"), py::arg("k"), py::arg("contract"),
      py::arg("name"), py::arg("family"),
      "Judges ids and gates [T, k] (k slots, -1 / 0 past min(k, E)) for float32 logits [T, E], "
      "in the routing family `family` (the raw tuple of family.hpp) or None for v1. Keyword knobs: "
      "tie_order, gate_factor, gate_ulp, analytic_floor.");

  // The same writer as `moe-oracle explain --as python|c`, on the reproducer's JSON text.
  m.def(
      "snippet",
      [](const std::string& reproducer, const std::string& language) {
        const nlohmann::json file =
            nlohmann::json::parse(reproducer, nullptr, /*allow_exceptions=*/false);
        if (file.is_discarded()) throw std::invalid_argument("snippet: not valid JSON");
        return fuzz::reproducerSnippet(file, language);
      },
      py::arg("reproducer"), py::arg("language"),
      "Each RouterReproducer test of a reproducer file (JSON text) as a self-contained "
      "program for a bug report: language \"python\" (torch) or \"c\" (C99).");
}

}  // namespace moe::python
