// The command moe-oracle as a function: main.cpp calls it, and so does a test build of the
// command that registers test-only routers first (tests/fuzz/broken/).
#pragma once

namespace moe::fuzz {

// Parses the command line (fuzz, replay, explain, reproduce, list) and runs it; returns the
// exit status (docs/fuzz.md). Whatever escapes is a message and exit 2 (guardedMain).
int runCommand(int argc, char** argv);

}  // namespace moe::fuzz
