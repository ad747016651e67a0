// moe_oracle.fuzz_dispatch and judge_dispatch: the dispatch door's campaign
// (runDispatchCampaign) on a PythonDispatcher, and its exact verdict (judgeDispatch) on one
// answer. The campaign runs with the GIL released; the dispatcher takes it back for each
// call of the function.
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <climits>

#include "dispatch_bindings.hpp"
#include "moe/fuzz/dispatch_campaign.hpp"
#include "moe/fuzz/dispatch_verdict.hpp"
#include "python_dispatcher.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

struct DispatchFuzzArguments {
  double seconds = 60;
  uint64_t seed = 1;
  uint64_t maxCases = 0;
  std::string out;
  bool keepGoing = false;
  double shrinkSeconds = 10;
  uint64_t minTokens = 1000;
  bool progress = false;
  std::string tokens, k, experts, block, capacity;
};

py::dict fuzzDispatchFunction(py::object dispatch, py::object unsupported, const std::string& name,
                              const std::string& contractJson, const DispatchFuzzArguments& a) {
  fuzz::DispatchContract contract = fuzz::parseDispatchContract(contractJson);
  fuzz::DispatchCampaignOptions options;
  options.draw.shapes =
      fuzz::dispatchShapesFor(contract.shapes, a.tokens, a.k, a.experts, a.block, a.capacity);
  options.draw.domainOnly = true;  // a function has no statuses, no NULL and no max_rows
  options.seconds = a.seconds;
  options.seed = a.seed;
  options.maxCases = a.maxCases;
  options.outDir = a.out;
  options.keepGoing = a.keepGoing;
  options.shrinkSeconds = a.shrinkSeconds;
  options.minTokens = a.minTokens;
  options.progress = a.progress;
  const PythonDispatcher d(name, std::move(contract), std::move(dispatch), std::move(unsupported));
  options.stop = d.stopFlag();
  fuzz::DispatchSummary s;
  {
    py::gil_scoped_release release;
    s = fuzz::runDispatchCampaign(d, options);
  }
  s.interrupted = s.interrupted || d.interrupted();
  std::vector<std::string> reports;
  for (const auto& f : s.findings) reports.push_back(f.report);
  py::dict answer;
  answer["summary"] = fuzz::dispatchSummaryJSON(s).dump();
  answer["text"] = fuzz::dispatchSummaryText(s);
  answer["reports"] = reports;
  answer["exit_code"] = s.interrupted ? 130 : s.exitCode();
  return answer;
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
         const std::string& contract, double seconds, uint64_t seed, uint64_t maxCases,
         const std::string& out, bool keepGoing, double shrinkSeconds, uint64_t minTokens,
         bool progress, const std::string& tokens, const std::string& k, const std::string& experts,
         const std::string& block, const std::string& capacity) {
        const DispatchFuzzArguments a{seconds,       seed,      maxCases, out,    keepGoing,
                                      shrinkSeconds, minTokens, progress, tokens, k,
                                      experts,       block,     capacity};
        return fuzzDispatchFunction(std::move(dispatch), std::move(unsupported), name, contract, a);
      },
      py::arg("dispatch"), py::arg("unsupported"), py::arg("name"), py::arg("contract"),
      py::arg("seconds"), py::arg("seed"), py::arg("max_cases"), py::arg("out"),
      py::arg("keep_going"), py::arg("shrink_seconds"), py::arg("min_tokens"), py::arg("progress"),
      py::arg("tokens"), py::arg("k"), py::arg("experts"), py::arg("block"), py::arg("capacity"),
      "Runs the dispatch door's campaign on dispatch(ids, k, experts, block, capacity) -> "
      "(sorted_slots, block_expert, rows); returns the --json summary (text), the summary "
      "text, the violation reports and the exit code.");
  m.def("judge_dispatch", &judgeDispatchAnswer, py::arg("ids"), py::arg("tokens"), py::arg("k"),
        py::arg("experts"), py::arg("block"), py::arg("capacity"), py::arg("sorted_slots"),
        py::arg("block_expert"), py::arg("rows"), py::arg("contract"),
        "The dispatch verdict on one answer: {kind ('' when it passes), tag, certificate, "
        "abstained, report}.");
}

}  // namespace moe::python
