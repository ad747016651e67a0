// moe-oracle (docs/fuzz.md): the command lives in moe_fuzz_cli (command.cpp).
#include "moe/fuzz/command.hpp"

int main(int argc, char** argv) {
  return moe::fuzz::runCommand(argc, argv);
}
