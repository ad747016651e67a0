// moe_oracle._core: the Python door's extension. Everything here calls the same
// judge, generator and shrinker as the `moe-oracle` command; the package's Python files only
// convert arrays and arguments.
#include "bindings.hpp"
#include "dispatch_bindings.hpp"
#include "family.hpp"

#ifndef MOE_ORACLE_VERSION
#define MOE_ORACLE_VERSION "unknown"
#endif

PYBIND11_MODULE(_core, m) {
  m.doc() = "moe-oracle's judge, generators and shrinker (use the moe_oracle package)";
  m.attr("__version__") = MOE_ORACLE_VERSION;
  moe::python::bindJudge(m);
  moe::python::bindFuzz(m);
  moe::python::bindCases(m);
  moe::python::bindFamily(m);
  moe::python::bindLayer(m);
  moe::python::bindDispatch(m);
}
