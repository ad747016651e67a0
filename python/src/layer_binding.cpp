// The layer door for Python: judge_layer (an output already computed, judged by the layer
// verdict), fuzz_layer (the command's layer campaign on a Python function) and
// draw_layer_case (the campaign's layer generator over Hypothesis's bytes). The package's
// moe_oracle/_layer.py converts arrays (NumPy or torch) and calls these.
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/stl.h>

#include <cstring>

#include "bindings.hpp"
#include "family.hpp"
#include "fuzz_request.hpp"
#include "moe/fuzz/layer_campaign.hpp"
#include "moe/fuzz/layer_draw.hpp"
#include "moe/fuzz/run_header.hpp"
#include "moe/route_abi.h"
#include "python_errors.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

template <class T>
using Dense = py::array_t<T, py::array::c_style | py::array::forcecast>;

std::vector<float> valuesOf(const py::handle& a, size_t n, const char* name) {
  const auto d = Dense<float>::ensure(a);
  if (!d || static_cast<size_t>(d.size()) != n) {
    throw std::invalid_argument(fmt::format("{}: expected {} float32 values", name, n));
  }
  return std::vector<float>(d.data(), d.data() + n);
}

template <class T>
py::array_t<T> arrayOf(const std::vector<T>& v, std::vector<py::ssize_t> shape) {
  py::array_t<T> a(shape);
  if (!v.empty()) std::memcpy(a.mutable_data(), v.data(), v.size() * sizeof(T));
  return a;
}

// The case from the package's arrays (shapes checked there; sizes checked again here).
fuzz::LayerCase caseOf(const py::handle& x, const py::handle& logits, const py::handle& w13,
                       const py::handle& w2, int32_t tokens, int32_t hidden, int32_t intermediate,
                       int32_t experts, int32_t k, const std::string& dtype,
                       const py::handle& family) {
  fuzz::LayerCase c;
  c.tokens = tokens, c.hidden = hidden, c.intermediate = intermediate, c.experts = experts, c.k = k;
  c.dtype = dtype == "bf16" ? fuzz::LayerDtype::kBf16 : fuzz::LayerDtype::kF32;
  const auto T = static_cast<size_t>(tokens), H = static_cast<size_t>(hidden),
             I = static_cast<size_t>(intermediate), E = static_cast<size_t>(experts);
  c.x = valuesOf(x, T * H, "x");
  c.logits = valuesOf(logits, T * E, "logits");
  c.w13 = valuesOf(w13, E * 2 * I * H, "w13");
  c.w2 = valuesOf(w2, E * H * I, "w2");
  if (!family.is_none()) c.family = familyFromTuple(family, experts);
  return c;
}

py::dict verdictDict(const fuzz::LayerVerdict& v) {
  py::dict d;
  d["token"] = v.token;
  d["outcome"] = v.outcome == fuzz::Outcome::kViolation    ? "violation"
                 : v.outcome == fuzz::Outcome::kAcceptable ? "acceptable"
                                                           : "exact";
  d["reason"] = v.reason;
  d["kind"] = std::string(fuzz::kindName(v.kind));
  d["expert"] = v.expert;
  d["coordinate"] = v.coordinate;
  d["certificate"] = v.certificate;
  d["margin"] = v.margin;
  return d;
}

// A layer that only names the judged output in reports and reproducers.
std::unique_ptr<fuzz::LayerKernel> namedLayer(const std::string& name, fuzz::Contract contract) {
  return fuzz::makeFunctionLayer(name, std::move(contract),
                                 [](const fuzz::LayerCase&, float*, int32_t*, float*) {
                                   fuzz::LayerFnAnswer answer;
                                   answer.status = MOE_ROUTE_EUNSUPPORTED;
                                   return answer;
                                 });
}

fuzz::Contract layerContract(const std::string& text) {
  fuzz::Contract c = fuzz::parseContract(text);
  if (!c.isLayer()) {
    throw std::invalid_argument(
        fmt::format("the contract says \"abi\": \"{}\"; a layer's is \"moe_layer_v1\"", c.abi));
  }
  return c;
}

py::dict judgeLayer(const py::handle& x, const py::handle& logits, const py::handle& w13,
                    const py::handle& w2, const py::tuple& shape, const std::string& dtype,
                    const py::handle& family, const py::handle& y, const py::handle& ids,
                    const py::handle& gates, const std::string& contractText,
                    const std::string& name) {
  const auto T = shape[0].cast<int32_t>(), H = shape[1].cast<int32_t>(),
             I = shape[2].cast<int32_t>(), E = shape[3].cast<int32_t>(),
             k = shape[4].cast<int32_t>();
  const fuzz::LayerCase c = caseOf(x, logits, w13, w2, T, H, I, E, k, dtype, family);
  fuzz::Contract contract = layerContract(contractText);
  fuzz::LayerOutput out;
  out.y = valuesOf(y, static_cast<size_t>(T) * H, "y");
  out.routed = !ids.is_none();
  if (out.routed) {
    const auto d = Dense<int32_t>::ensure(ids);
    const size_t slots = static_cast<size_t>(T) * k;
    if (!d || static_cast<size_t>(d.size()) != slots) {
      throw std::invalid_argument(fmt::format("ids: expected {} int32 values", slots));
    }
    out.ids.assign(d.data(), d.data() + slots);
    out.gates = valuesOf(gates, slots, "gates");
  }
  fuzz::Judge judge;
  fuzz::LayerCaseResult r;
  {
    py::gil_scoped_release release;
    r = fuzz::judgeLayerOutput(c, out, contract, judge, fuzz::LayerRerun{});
  }
  py::list verdicts;
  for (const auto& v : r.tokens) verdicts.append(verdictDict(v));
  py::dict answer;
  answer["verdicts"] = verdicts;
  answer["report"] = r.violation ? fuzz::layerReport(name, c, r) : std::string();
  answer["reproducer"] = r.violation
                             ? fuzz::layerReproducerFile(*namedLayer(name, contract), c, out.routed,
                                                         r, {{"tool", "moe_oracle.judge_layer"}})
                                   .dump(1)
                             : std::string();
  return answer;
}

// The Python function as a layer: call(x, logits, w13, w2, k, family_tuple, dtype) returns
// (y, ids or None, gates or None); the Unsupported exception abstains; any other is a
// finding of kind exception with its traceback; Ctrl-C ends the run.
struct PythonLayer {
  py::object call, unsupported;
  std::shared_ptr<volatile std::sig_atomic_t> stop;

  fuzz::LayerFnAnswer operator()(const fuzz::LayerCase& c, float* y, int32_t* ids,
                                 float* gates) const {
    fuzz::LayerFnAnswer a;
    if (*stop != 0) {
      a.stopped = true;
      return a;
    }
    py::gil_scoped_acquire gil;
    try {
      if (PyErr_CheckSignals() != 0) throw py::error_already_set();
      const auto T = static_cast<py::ssize_t>(c.tokens), H = static_cast<py::ssize_t>(c.hidden),
                 I = static_cast<py::ssize_t>(c.intermediate),
                 E = static_cast<py::ssize_t>(c.experts);
      const py::object answer =
          call(arrayOf(c.x, {T, H}), arrayOf(c.logits, {T, E}), arrayOf(c.w13, {E, 2 * I, H}),
               arrayOf(c.w2, {E, H, I}), c.k,
               c.family ? py::object(familyToTuple(*c.family)) : py::object(py::none()),
               fuzz::layerDtypeName(c.dtype));
      const auto out = answer.cast<py::tuple>();
      const auto yv = valuesOf(out[0], static_cast<size_t>(T * H), "y");
      if (!yv.empty()) std::memcpy(y, yv.data(), yv.size() * sizeof(float));
      a.routed = !out[1].is_none();
      if (a.routed && ids && gates) {
        const size_t slots = static_cast<size_t>(c.tokens) * c.k;
        const auto d = Dense<int32_t>::ensure(out[1]);
        if (!d || static_cast<size_t>(d.size()) != slots) {
          throw std::invalid_argument(fmt::format("ids: expected {} int32 values", slots));
        }
        if (slots > 0) std::memcpy(ids, d.data(), slots * sizeof(int32_t));
        const auto g = valuesOf(out[2], slots, "gates");
        if (slots > 0) std::memcpy(gates, g.data(), slots * sizeof(float));
      }
      return a;
    } catch (py::error_already_set& e) {
      if (e.matches(unsupported)) {
        a.status = MOE_ROUTE_EUNSUPPORTED;
        return a;
      }
      if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) {
        *stop = 1;
        a.stopped = true;
        return a;
      }
      a.fault = fuzz::RouteFault{
          fuzz::ViolationKind::kException,
          fmt::format("the function raised {}: {}", exceptionTag(e), e.what()), exceptionTag(e)};
      return a;
    } catch (const std::exception& e) {
      a.fault = fuzz::RouteFault{fuzz::ViolationKind::kException,
                                 fmt::format("the function's output: {}", e.what()), "output"};
      return a;
    }
  }
};

py::dict fuzzLayer(py::object call, py::object unsupported, const std::string& name,
                   const std::string& contractText, const fuzz::FuzzRequest& request) {
  fuzz::Contract contract = layerContract(contractText);
  fuzz::LayerCampaignOptions o =
      fuzz::layerCampaignOptions(request, contract, fuzz::FuzzDoor::kPython);
  checkOut(request);
  auto stop = std::make_shared<volatile std::sig_atomic_t>(0);
  o.stop = stop.get();
  const auto kernel = fuzz::makeFunctionLayer(
      name, std::move(contract), PythonLayer{std::move(call), std::move(unsupported), stop});
  sayHeader(o, fuzz::layerRunHeader(*kernel, o));
  fuzz::LayerSummary s;
  {
    py::gil_scoped_release release;
    s = fuzz::runLayerCampaign(*kernel, o);
  }
  return answerOf(fuzz::runOutcome(s), s.interrupted);
}

}  // namespace

void bindLayer(py::module_& m) {
  m.def("judge_layer", &judgeLayer, py::arg("x"), py::arg("logits"), py::arg("w13"), py::arg("w2"),
        py::arg("shape"), py::arg("dtype"), py::arg("family"), py::arg("y"), py::arg("ids"),
        py::arg("gates"), py::arg("contract"), py::arg("name"),
        "The layer verdict on an output already computed: per-token verdicts, the report and "
        "the reproducer of the first violation ('' when none).");
  m.def(
      "fuzz_layer",
      [](py::object call, py::object unsupported, const std::string& name,
         const std::string& contract, const py::kwargs& keywords) {
        return fuzzLayer(std::move(call), std::move(unsupported), name, contract,
                         requestOf(keywords, fuzz::kPythonLayer));
      },
      py::arg("call"), py::arg("unsupported"), py::arg("name"), py::arg("contract"),
      "Runs the command's layer campaign on call(x, logits, w13, w2, k, family, dtype) -> (y, "
      "ids or None, gates or None), with the keywords of fuzz_options() that "
      "moe_oracle.fuzz_layer takes; returns the --json summary (text), the summary text, the "
      "reports and the exit code.");
  m.def(
      "draw_layer_case",
      [](const py::bytes& data, const std::string& contract, const std::string& tokens,
         const std::string& k, const std::string& experts, const std::string& hidden,
         const std::string& intermediate, int64_t maxWeights) {
        fuzz::LayerDraw d =
            fuzz::layerDrawFor(layerContract(contract), tokens, k, experts, hidden, intermediate);
        d.maxWeights = maxWeights;
        d.maxWork = maxWeights * 4;
        const std::string_view bytes = data;
        fuzz::SpanSource source(
            std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
        const fuzz::DrawnLayer drawn = fuzz::drawLayerCase(source, d);
        const fuzz::LayerCase& c = drawn.c;
        const auto T = static_cast<py::ssize_t>(c.tokens), H = static_cast<py::ssize_t>(c.hidden),
                   I = static_cast<py::ssize_t>(c.intermediate),
                   E = static_cast<py::ssize_t>(c.experts);
        return py::make_tuple(
            arrayOf(c.x, {T, H}), arrayOf(c.logits, {T, E}), arrayOf(c.w13, {E, 2 * I, H}),
            arrayOf(c.w2, {E, H, I}), c.k, fuzz::layerDtypeName(c.dtype),
            c.family ? py::object(familyToTuple(*c.family)) : py::object(py::none()), drawn.style,
            drawn.shape);
      },
      py::arg("data"), py::arg("contract"), py::arg("tokens"), py::arg("k"), py::arg("experts"),
      py::arg("hidden"), py::arg("intermediate"), py::arg("max_weights"),
      "drawLayerCase over these bytes (zeros past the end): (x, logits, w13, w2, k, dtype, "
      "family tuple or None, style, shape).");
}

}  // namespace moe::python
