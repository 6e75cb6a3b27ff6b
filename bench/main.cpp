// stx-bench: benchmark programs of STX Studio. Each subcommand is one register function, listed in
// kCommands below; it adds its options and the callback that runs it.
#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <string>

#include "commands.h"
#include "stx/engine/process/process_start.h"

namespace {

using RegisterCommand = void (*)(CLI::App& parent);

// The one place where subcommands are registered.
constexpr RegisterCommand kCommands[] = {
    stx::bench::register_attention_command,
    stx::bench::register_train_command,
    stx::bench::register_sample_command,
    stx::bench::register_quality_command,
};

}  // namespace

int main(int argc, char** argv) {
  // The programs' OpenMP spin-wait, so that the figures are what stx and stx-studio get.
  stx::engine::restart_with_short_openmp_spins(argv);
  CLI::App app{"stx-bench: benchmarks of the STX Studio kernels against LibTorch, measured in one process",
               "stx-bench"};
  app.require_subcommand(1);
  // One line for a bad option value, then a non-zero exit.
  app.failure_message([](const CLI::App*, const CLI::Error& e) {
    return std::string("stx-bench: ") + e.what() + " (see --help)\n";
  });
  for (RegisterCommand add : kCommands) add(app);

  try {
    app.parse(argc, argv);  // runs the chosen subcommand's callback
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::cout.flush();
    std::cerr << "stx-bench: error: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
