#include "family.hpp"

#include <fmt/format.h>
#include <pybind11/numpy.h>

#include <cstring>
#include <stdexcept>

namespace py = pybind11;

namespace moe::python {

namespace {
constexpr size_t kFields = 8;
}

fuzz::Family familyFromTuple(const py::handle& raw, int32_t experts) {
  const auto t = py::reinterpret_borrow<py::tuple>(raw);
  if (t.size() != kFields) {
    throw std::invalid_argument(
        fmt::format("family: expected a tuple of {} raw fields, got {}", kFields, t.size()));
  }
  fuzz::Family f;
  f.score = static_cast<fuzz::ScoreFunction>(t[0].cast<int32_t>());
  if (!t[1].is_none()) {
    const auto bias = py::array_t<float, py::array::c_style | py::array::forcecast>::ensure(t[1]);
    // Any length: familyInvalidReason says when it is not one value per expert.
    if (!bias || bias.ndim() != 1) {
      throw std::invalid_argument(
          fmt::format("family: bias must be float32 [E], one value per expert ({})", experts));
    }
    f.bias.assign(bias.data(), bias.data() + bias.size());
  }
  f.groups = t[2].cast<int32_t>();
  f.topkGroups = t[3].cast<int32_t>();
  f.groupScore = static_cast<fuzz::GroupScoreFunction>(t[4].cast<int32_t>());
  f.renormalize = t[5].cast<int32_t>();
  f.scale = t[6].cast<float>();
  f.structShort = t[7].cast<int32_t>();
  return f;
}

py::tuple familyToTuple(const fuzz::Family& f) {
  py::object bias = py::none();
  if (!f.bias.empty()) {
    py::array_t<float> b(static_cast<py::ssize_t>(f.bias.size()));
    std::memcpy(b.mutable_data(), f.bias.data(), f.bias.size() * sizeof(float));
    bias = std::move(b);
  }
  return py::make_tuple(static_cast<int32_t>(f.score), bias, f.groups, f.topkGroups,
                        static_cast<int32_t>(f.groupScore), f.renormalize, f.scale, f.structShort);
}

void bindFamily(py::module_& m) {
  m.def(
      "family_check",
      [](const py::tuple& raw, int32_t experts) {
        const fuzz::Family f = familyFromTuple(raw, experts);
        return py::make_tuple(fuzz::familyInvalidReason(f, experts),
                              fuzz::familyEligible(f, experts), fuzz::familyText(f));
      },
      py::arg("family"), py::arg("experts"),
      "(why the family is outside route_abi.h's domain for E experts or '', the experts it "
      "makes eligible, its description) for the raw tuple (score, bias, groups, topk_groups, "
      "group_score, renormalize, scale, struct_short).");
}

}  // namespace moe::python
