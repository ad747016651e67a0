// moe_oracle.fuzz: runCampaign, the command's campaign, on a PythonRouter. The campaign runs
// with the GIL released (the judge and the shrinker are C++); the router takes it back for
// each call of the function.
#include <pybind11/stl.h>

#include "bindings.hpp"
#include "fuzz_request.hpp"
#include "moe/fuzz/campaign.hpp"
#include "moe/fuzz/run_header.hpp"
#include "python_router.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

py::dict fuzzFunction(py::object route, py::object unsupported, const std::string& name,
                      const std::string& contractJson, const fuzz::FuzzRequest& request) {
  fuzz::Contract contract = fuzz::parseContract(contractJson);
  fuzz::CampaignOptions options =
      fuzz::campaignOptions(request, contract, name, fuzz::FuzzDoor::kPython);
  checkOut(request);
  const PythonRouter router(name, std::move(contract), std::move(route), std::move(unsupported));
  options.stop = router.stopFlag();
  sayHeader(options, fuzz::routerRunHeader(router, options, request));
  fuzz::CampaignSummary s;
  {
    py::gil_scoped_release release;
    s = fuzz::runCampaign(router, options);
  }
  return answerOf(fuzz::runOutcome(s), s.interrupted || router.interrupted());
}

}  // namespace

void bindFuzz(py::module_& m) {
  m.def(
      "fuzz",
      [](py::object route, py::object unsupported, const std::string& name,
         const std::string& contract, const py::kwargs& keywords) {
        return fuzzFunction(std::move(route), std::move(unsupported), name, contract,
                            requestOf(keywords, fuzz::kPythonRouter));
      },
      py::arg("route"), py::arg("unsupported"), py::arg("name"), py::arg("contract"),
      "Runs the command's campaign on route(logits, k) -> (ids, gates), with the keywords of "
      "fuzz_options() that moe_oracle.fuzz takes; returns the --json summary (text), the "
      "summary text, the violation reports and the exit code.");
  bindFuzzOptions(m);
  bindRunOutcome(m);
}

}  // namespace moe::python
