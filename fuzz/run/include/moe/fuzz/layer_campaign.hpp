// The layer door's campaign, reproducers, replay and explain (docs/fuzz.md "The layer
// door"): fused-layer cases drawn from a seeded stream (layer_draw.hpp), each called with
// and without the routing asked for and judged by the layer verdict; a violation shrunk
// and written as a Wycheproof-style file (group LayerReproducer) that `moe-oracle replay`
// judges again and `moe-oracle explain` tells.
#pragma once

#include <csignal>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "moe/fuzz/door_summary.hpp"
#include "moe/fuzz/layer_draw.hpp"
#include "moe/fuzz/layer_kernel.hpp"
#include "moe/fuzz/layer_verdict.hpp"
#include "moe/fuzz/run_loop.hpp"
#include "moe/fuzz/vectors.hpp"

namespace moe::fuzz {

struct LayerCampaignOptions : RunOptions {
  LayerDraw draw;
};

using LayerFinding = DoorFinding<std::string>;  // the shapes (layerShapeText)

struct LayerSummary : DoorSummary<LayerFinding> {
  uint64_t acceptable = 0;
  std::map<std::string, uint64_t> styles, shapes, dtypes, routing, acceptableReasons;
};

LayerSummary runLayerCampaign(const LayerKernel& kernel, const LayerCampaignOptions& options);
nlohmann::json layerSummaryJSON(const LayerSummary& s);
std::string layerSummaryText(const LayerSummary& s);

// A reproducer file: one LayerReproducer test with the case, the call (routing asked or
// not), the output and the verdict.
nlohmann::json layerReproducerFile(const LayerKernel& kernel, const LayerCase& c, bool withRouting,
                                   const LayerCaseResult& r, const nlohmann::json& provenance);
// A report for a person: the case, the token, the coordinate and expert named, the
// kernel's y against the reference and budget there, the certificate, the signature.
std::string layerReport(const std::string& name, const LayerCase& c, const LayerCaseResult& r);

// isLayerVectorFile (vectors.hpp) sends a file here.
// Each LayerReproducer: the recorded output judged again must still be a violation; with
// `impl`, the kernel rerun on the case must not violate.
ReplaySummary replayLayerVectors(const nlohmann::json& file, const LayerKernel* impl);
// Each test told for a person (rerun through `impl` when given).
std::string explainLayerVectors(const nlohmann::json& file, const LayerKernel* impl,
                                int* unexplained = nullptr);

}  // namespace moe::fuzz
