// moe_oracle.fuzz: runCampaign, the command's campaign, on a PythonRouter. The campaign runs
// with the GIL released (the judge and the shrinker are C++); the router takes it back for
// each call of the function.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "moe/fuzz/campaign.hpp"
#include "python_router.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

struct FuzzArguments {
  double seconds = 60;
  uint64_t seed = 1;
  uint64_t maxCases = 0;
  std::string out;
  bool keepGoing = false;
  double shrinkSeconds = 10;
  uint64_t minTokens = 1000;
  bool progress = false;
  std::string experts, k, tokens, family;
};

py::dict fuzzFunction(py::object route, py::object unsupported, const std::string& name,
                      const std::string& contractJson, const FuzzArguments& a,
                      const fuzz::VerdictConfig& config) {
  fuzz::Contract contract = fuzz::parseContract(contractJson);
  fuzz::CampaignOptions options;
  options.shapes = fuzz::shapeSpaceFor(contract.shapes, a.experts, a.k, a.tokens, "");
  if (!a.family.empty()) {
    if (!contract.v2()) {
      throw std::invalid_argument(
          "family: the recipes are moe_route_v2's; the contract needs \"abi\": \"moe_route_v2\"");
    }
    options.families = fuzz::familiesOfRecipes(a.family, "family");
  }
  if (contract.v2()) {
    fuzz::checkFamiliesDrawable(options.families.value_or(contract.families), options.shapes);
  }
  options.seconds = a.seconds;
  options.seed = a.seed;
  options.maxCases = a.maxCases;
  options.outDir = a.out;
  options.config = config;
  options.keepGoing = a.keepGoing;
  options.shrinkSeconds = a.shrinkSeconds;
  options.minTokens = a.minTokens;
  options.progress = a.progress;
  const PythonRouter router(name, std::move(contract), std::move(route), std::move(unsupported));
  options.stop = router.stopFlag();
  fuzz::CampaignSummary s;
  {
    py::gil_scoped_release release;
    s = fuzz::runCampaign(router, options);
  }
  s.interrupted = s.interrupted || router.interrupted();
  std::vector<std::string> reports;
  for (const auto& v : s.violations) reports.push_back(v.report);
  py::dict answer;
  answer["summary"] = fuzz::summaryJSON(s).dump();
  answer["text"] = fuzz::summaryText(s);
  answer["reports"] = reports;
  answer["exit_code"] = s.interrupted ? 130 : s.exitCode();
  return answer;
}

}  // namespace

void bindFuzz(py::module_& m) {
  m.def(
      "fuzz",
      [](py::object route, py::object unsupported, const std::string& name,
         const std::string& contract, double seconds, uint64_t seed, uint64_t maxCases,
         const std::string& out, bool keepGoing, double shrinkSeconds, uint64_t minTokens,
         bool progress, const std::string& experts, const std::string& k, const std::string& tokens,
         const std::string& family, const py::kwargs& knobs) {
        const FuzzArguments a{seconds,   seed,     maxCases, out, keepGoing, shrinkSeconds,
                              minTokens, progress, experts,  k,   tokens,    family};
        fuzz::VerdictConfig config = makeVerdictConfig(knobs);
        const int jobs = knobs.contains("jobs") ? knobs["jobs"].cast<int>() : 0;
        config.jobs = jobs > 0 ? jobs : fuzz::availableCores();
        return fuzzFunction(std::move(route), std::move(unsupported), name, contract, a, config);
      },
      py::arg("route"), py::arg("unsupported"), py::arg("name"), py::arg("contract"),
      py::arg("seconds"), py::arg("seed"), py::arg("max_cases"), py::arg("out"),
      py::arg("keep_going"), py::arg("shrink_seconds"), py::arg("min_tokens"), py::arg("progress"),
      py::arg("experts"), py::arg("k"), py::arg("tokens"), py::arg("family"),
      "Runs the command's campaign on route(logits, k) -> (ids, gates); returns the --json "
      "summary (text), the summary text, the violation reports and the exit code.");
}

}  // namespace moe::python
