// stx: STX Studio's command line. Every engine job runs here headless; for now it drives the kernels.
//
// Exit status: 0 success, 1 a failed run (a kernel error, a FAILed check), 2 a bad command line.
#include <omp.h>

#include <CLI/CLI.hpp>
#include <exception>
#include <iostream>
#include <thread>

#include "check_command.h"
#include "layout_command.h"
#include "pattern_options.h"
#include "stx/kernels/error.h"

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// The project rule is that programs use every core; OpenMP's own default can be lower in containers
// and under OMP_NUM_THREADS left over from another tool.
void use_all_cores() {
  const unsigned cores = std::thread::hardware_concurrency();
  if (cores > 0) omp_set_num_threads(static_cast<int>(cores));
}

}  // namespace

int main(int argc, char** argv) {
  use_all_cores();

  CLI::App app{"stx " STX_VERSION
               ": Sparse Transformer attention patterns, kernels and (soon) models, headless",
               "stx"};
  app.set_version_flag("--version", "stx " STX_VERSION);
  app.require_subcommand(1);

  stx::cli::LayoutOptions layout_options;
  stx::cli::CheckOptions check_options;
  CLI::App* layout = stx::cli::add_layout_command(app, layout_options);
  CLI::App* check = stx::cli::add_check_command(app, check_options);

  // Parse errors (unknown option, not a number) come from CLI11; their codes vary, we report them as 2.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  // The kernels check every input themselves; a value the CLI let through still ends in one clear line.
  const char* name = layout->parsed() ? "stx layout" : "stx check";
  try {
    if (layout->parsed()) return stx::cli::run_layout_command(layout_options);
    if (check->parsed()) return stx::cli::run_check_command(check_options);
  } catch (const stx::cli::UsageError& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kExitUsage;
  } catch (const stx::kernels::Error& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kExitFailed;
  } catch (const std::bad_alloc&) {
    std::cerr << name << ": out of memory; try a smaller --n or fewer --heads\n";
    return kExitFailed;
  } catch (const std::exception& e) {
    std::cerr << name << ": " << e.what() << "\n";
    return kExitFailed;
  }
  return kExitFailed;  // unreachable: require_subcommand(1) guarantees one of them parsed
}
