// fuzz_vectors: the golden-vector JSON loader, replayer and explainer (property): any bytes
// give a clean answer or a clear exception, never a crash, hang or sanitizer report.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string_view>

#include "moe/fuzz/vectors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace moe::fuzz;
  if (size > 1 << 16) return 0;  // keep each input cheap: vectors are small JSON files
  std::string_view text(reinterpret_cast<const char*>(data), size);
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return 0;
  try {
    checkVectorLayout(j);
    replayVectors(j, nullptr, VerdictConfig{});
    explainVectors(j, nullptr, VerdictConfig{});
  } catch (const std::invalid_argument&) {
  } catch (const std::runtime_error&) {
  } catch (const nlohmann::json::exception&) {
  }
  return 0;
}
