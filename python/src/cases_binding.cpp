// draw_case: the campaign's generator (drawCase) fed by bytes that Hypothesis draws, so that
// moe_oracle.strategies yields the fuzzer's own adversarial cases and Hypothesis shrinks them
// by shrinking the bytes. Bytes past the end read as zeros: the simplest choice everywhere
// (the smallest shape of the space, k = 0, one token, logits +0).
#include <pybind11/numpy.h>

#include <cstring>

#include "bindings.hpp"
#include "family.hpp"
#include "moe/fuzz/case.hpp"
#include "moe/fuzz/contract.hpp"

namespace py = pybind11;

namespace moe::python {

namespace {

py::array_t<float> logitsArray(const fuzz::Case& c) {
  py::array_t<float> logits(
      {static_cast<py::ssize_t>(c.tokens), static_cast<py::ssize_t>(c.experts)});
  if (!c.logits.empty()) {
    std::memcpy(logits.mutable_data(), c.logits.data(), c.logits.size() * sizeof(float));
  }
  return logits;
}

fuzz::SpanSource sourceOf(std::string_view bytes) {
  return fuzz::SpanSource(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
}

}  // namespace

void bindCases(py::module_& m) {
  m.def(
      "draw_case",
      [](const py::bytes& data, const std::string& experts, const std::string& k,
         const std::string& tokens) {
        fuzz::SpanSource source = sourceOf(data);
        const fuzz::Case c =
            fuzz::drawCase(source, fuzz::shapeSpaceFor({}, experts, k, tokens, ""));
        return py::make_tuple(logitsArray(c), c.k, c.split, c.threads, c.variant, c.allowNaN);
      },
      py::arg("data"), py::arg("experts"), py::arg("k"), py::arg("tokens"),
      "drawCase over these bytes (zeros past the end) at the shapes given as the command's "
      "value-and-range lists ('' for the default): (logits [T, E] float32, k, split, threads, "
      "variant, allow_nan).");
  m.def(
      "draw_family_case",
      [](const py::bytes& data, const std::string& experts, const std::string& k,
         const std::string& tokens, const std::string& contract) {
        // The families come from a v2 contract's "families", read by the contract's parser.
        const fuzz::Contract parsed = fuzz::parseContract(contract);
        const fuzz::ShapeSpace space = fuzz::shapeSpaceFor({}, experts, k, tokens, "");
        fuzz::checkFamiliesDrawable(parsed.families, space);  // a clear ValueError, not a draw
        fuzz::SpanSource source = sourceOf(data);
        const fuzz::Case c = fuzz::drawFamilyCase(source, space, parsed.families);
        return py::make_tuple(logitsArray(c), c.k, c.split, familyToTuple(*c.family));
      },
      py::arg("data"), py::arg("experts"), py::arg("k"), py::arg("tokens"), py::arg("contract"),
      "drawFamilyCase over these bytes (zeros past the end), the families of the v2 contract "
      "given as JSON text: (logits [T, E] float32, k, split, the family's raw tuple).");
}

}  // namespace moe::python
