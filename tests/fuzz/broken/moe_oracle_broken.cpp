// moe-oracle-broken: the command moe-oracle with the broken routers registered, so tests can
// run `moe-oracle-broken reproduce --impl broken-<bug>` (tests/fuzz_campaign/). Test-only.
#include "moe/fuzz/broken_routers.hpp"
#include "moe/fuzz/command.hpp"

int main(int argc, char** argv) {
  moe::fuzz::registerBrokenRouters();
  return moe::fuzz::runCommand(argc, argv);
}
