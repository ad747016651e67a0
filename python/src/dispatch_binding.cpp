// moe_oracle.fuzz_dispatch and judge_dispatch: the dispatch door's campaign
// (runDispatchCampaign) on a PythonDispatcher, and its exact verdict (judgeDispatch) on one
// answer. The campaign runs with the GIL released; the dispatcher takes it back for each
// call of the function.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <climits>

#include "dispatch_bindings.hpp"
#include "fuzz_request.hpp"
#include "moe/fuzz/dispatch_campaign.hpp"
#include "moe/fuzz/dispatch_verdict.hpp"
#include "moe/fuzz/run_header.hpp"
#include "python_dispatcher.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

py::dict fuzzDispatchFunction(py::object dispatch, py::object unsupported, const std::string& name,
                              const std::string& contractJson, const fuzz::FuzzRequest& request) {
  fuzz::DispatchContract contract = fuzz::parseDispatchContract(contractJson);
  fuzz::DispatchCampaignOptions options = fuzz::dispatchCampaignOptions(request, contract.shapes);
  options.draw.domainOnly = true;  // a function has no statuses, no NULL and no max_rows
  checkOut(request);
  const PythonDispatcher d(name, std::move(contract), std::move(dispatch), std::move(unsupported));
  options.stop = d.stopFlag();
  sayHeader(options, fuzz::dispatchRunHeader(d, options));
  fuzz::DispatchSummary s;
  {
    py::gil_scoped_release release;
    s = fuzz::runDispatchCampaign(d, options);
  }
  return answerOf(fuzz::runOutcome(s), s.interrupted || d.interrupted());
}

using Dense = py::array_t<int32_t, py::array::c_style | py::array::forcecast>;

std::vector<int32_t> listOf(const Dense& a) {
  return {a.data(), a.data() + a.size()};
}

// One answer judged: the case (max_rows the padded length's bound, so that only the
// content is judged), the answer as the kernel's buffers, the verdict and the report.
py::dict judgeDispatchAnswer(const Dense& ids, int32_t tokens, int32_t k, int32_t experts,
                             int32_t block, int32_t capacity, const Dense& sortedSlots,
                             const Dense& blockExpert, int64_t rows,
                             const std::string& contractJson) {
  const fuzz::DispatchContract contract = fuzz::parseDispatchContract(contractJson);
  fuzz::DispatchCase c;
  c.tokens = tokens;
  c.k = k;
  c.experts = experts;
  c.block = block;
  c.capacity = capacity;
  c.ids = listOf(ids);
  const int64_t needed = fuzz::dispatchRowsNeeded(c);
  c.maxRows = static_cast<int32_t>(std::min<int64_t>(
      INT32_MAX, std::max<int64_t>({needed, rows, sortedSlots.size(),
                                    int64_t{blockExpert.size()} * std::max(block, 1)})));
  fuzz::DispatchOutput out;
  out.sortedSlots = listOf(sortedSlots);
  out.sortedSlots.resize(c.sortedEntries(), fuzz::kDispatchUnwritten);
  out.blockExpert = listOf(blockExpert);
  out.blockExpert.resize(c.blockExpertEntries(), fuzz::kDispatchUnwritten);
  out.rows = static_cast<int32_t>(std::clamp<int64_t>(rows, INT32_MIN, INT32_MAX));
  const fuzz::DispatchVerdict v = fuzz::judgeDispatch(c, out, contract.order);
  py::dict answer;
  answer["kind"] = v.violation() ? std::string(fuzz::kindName(v.kind)) : "";
  answer["tag"] = v.tag;
  answer["certificate"] = v.certificate;
  answer["abstained"] = v.abstained;
  answer["report"] =
      v.violation()
          ? fuzz::dispatchReport(contract.name.empty() ? "dispatch" : contract.name, c, out, v)
          : std::string();
  return answer;
}

}  // namespace

void bindDispatch(py::module_& m) {
  m.def(
      "fuzz_dispatch",
      [](py::object dispatch, py::object unsupported, const std::string& name,
         const std::string& contract, const py::kwargs& keywords) {
        return fuzzDispatchFunction(std::move(dispatch), std::move(unsupported), name, contract,
                                    requestOf(keywords, fuzz::kPythonDispatch));
      },
      py::arg("dispatch"), py::arg("unsupported"), py::arg("name"), py::arg("contract"),
      "Runs the dispatch door's campaign on dispatch(ids, k, experts, block, capacity) -> "
      "(sorted_slots, block_expert, rows), with the keywords of fuzz_options() that "
      "moe_oracle.fuzz_dispatch takes; returns the --json summary (text), the summary text, "
      "the violation reports and the exit code.");
  m.def("judge_dispatch", &judgeDispatchAnswer, py::arg("ids"), py::arg("tokens"), py::arg("k"),
        py::arg("experts"), py::arg("block"), py::arg("capacity"), py::arg("sorted_slots"),
        py::arg("block_expert"), py::arg("rows"), py::arg("contract"),
        "The dispatch verdict on one answer: {kind ('' when it passes), tag, certificate, "
        "abstained, report}.");
}

}  // namespace moe::python
