// SHA-256 against the FIPS 180-4 / NIST example vectors, including messages whose padding
// spills into a second block, and the staleness check of the Lean vectors it serves.
#include "sha256.hpp"

#include <gtest/gtest.h>

#include <string>

#include "lean_vectors.hpp"

namespace moe::lean {
namespace {

TEST(Sha256, NistShortMessages) {
  EXPECT_EQ(sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Sha256, NistTwoBlockMessage) {
  // 56 bytes: the length field no longer fits, so padding adds a second block.
  EXPECT_EQ(sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

TEST(Sha256, MillionAsInPieces) {
  // Fed in uneven pieces, so that block boundaries fall inside update() calls.
  Sha256 h;
  std::size_t fed = 0;
  for (std::size_t piece = 1; fed < 1000000; piece = piece % 97 + 1) {
    const std::size_t n = std::min(piece, 1000000 - fed);
    h.update(std::string(n, 'a'));
    fed += n;
  }
  EXPECT_EQ(h.hexDigest(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Fails when Spec.lean or Export.lean changed after the vectors were generated: the
// vectors would then no longer be what the Lean files say. Fix: run lean-traces/regen.
TEST(LeanVectorsFresh, RecordedSha256MatchesSpecAndExport) {
  const auto& provenance = vectors().at("provenance");
  EXPECT_EQ(provenance.at("specSha256").get<std::string>(),
            sha256OfFile(leanTracesDir() + "/Spec.lean"))
      << "lean-traces/Spec.lean changed since the vectors were generated: run lean-traces/regen";
  EXPECT_EQ(provenance.at("exportSha256").get<std::string>(),
            sha256OfFile(leanTracesDir() + "/Export.lean"))
      << "lean-traces/Export.lean changed since the vectors were generated: run lean-traces/regen";
}

TEST(LeanVectorsFresh, PinnedLeanToolchain) {
  const auto& provenance = vectors().at("provenance");
  EXPECT_EQ(provenance.at("lean"), "4.28.0");
  EXPECT_EQ(provenance.at("leanCommit"), "38f3c0c45b8df6da2652faff6dcaa15afb5a6981");
}

}  // namespace
}  // namespace moe::lean
