// stx: STX Studio's command line. Every engine job runs here headless.
//
// Exit status: 0 success, 1 a failed run (a bad file, a kernel error, a FAILed check), 2 a bad command
// line, 130 a training run stopped by Ctrl-C after saving, or sampling stopped (what it made is written).

#include <CLI/CLI.hpp>
#include <iostream>

#include "check_command.h"
#include "cli_errors.h"
#include "layout_command.h"
#include "model_commands.h"
#include "pattern_options.h"
#include "sample_command.h"
#include "stx/engine/error.h"
#include "stx/engine/threads.h"
#include "stx/engine/process/process_start.h"
#include "train_command.h"

namespace {

constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

void add_threads_option(CLI::App& app, int& threads) {
  for (CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
    command
        ->add_option("--threads", threads,
                     "threads this job may run on, per process (default: every core, or STX_THREADS); generation "
                     "uses fewer on its own while other programs keep cores busy")
        ->check(CLI::Range(1, stx::engine::kMaxThreads));
    add_threads_option(*command, threads);
  }
}

}  // namespace

int main(int argc, char** argv) {
  stx::engine::restart_with_short_openmp_spins(argv);  // first: it may start the program again
  stx::engine::use_job_threads();  // Debian's LibTorch would start with one thread

  CLI::App app{"stx " STX_VERSION ": Sparse Transformers headless: train, evaluate, sample, inspect models and patterns",
               "stx"};
  app.set_version_flag("--version", "stx " STX_VERSION);
  app.require_subcommand(1);
  // One line for a bad option, then exit status 2.
  app.failure_message([](const CLI::App*, const CLI::Error& e) { return std::string("stx: ") + e.what() + " (see --help)\n"; });

  stx::cli::TrainCommandOptions train_options;
  stx::cli::EvalOptions eval_options;
  stx::cli::InfoOptions info_options;
  stx::cli::ExportOptions export_options;
  stx::cli::LayoutOptions layout_options;
  stx::cli::CheckOptions check_options;
  CLI::App* train = stx::cli::add_train_command(app, train_options);
  CLI::App* eval = stx::cli::add_eval_command(app, eval_options);
  CLI::App* info = stx::cli::add_info_command(app, info_options);
  CLI::App* export_model = stx::cli::add_export_command(app, export_options);
  CLI::App* layout = stx::cli::add_layout_command(app, layout_options);
  CLI::App* check = stx::cli::add_check_command(app, check_options);
  stx::cli::SampleCommandOptions sample_options;
  CLI::App* sample = stx::cli::add_sample_command(app, sample_options);

  // --threads on every command, down to `stx sample audio`: what the whole job may run on.
  int threads = 0;
  add_threads_option(app, threads);

  // `stx help` and `stx help COMMAND`, as git and cargo take them.
  const bool asks_help = argc > 1 && std::string(argv[1]) == "help";
  if (asks_help && argc == 2) {
    std::cout << app.help();
    return 0;
  }
  const int command_at = asks_help ? 2 : 1;
  if (argc > command_at && argv[command_at][0] != '-') {
    std::string known;
    bool found = false;
    for (const CLI::App* command : app.get_subcommands([](const CLI::App*) { return true; })) {
      known += (known.empty() ? "" : ", ") + command->get_name();
      found = found || command->get_name() == argv[command_at];
    }
    // CLI11 calls a word that names no command "a subcommand is required"; name it instead.
    if (!found) {
      std::cerr << "stx: unknown command '" << argv[command_at] << "' (commands: " << known << "; see --help)\n";
      return kExitUsage;
    }
    if (asks_help) {  // `stx help sample image` goes down to the kind, as `stx sample image --help` does
      std::string prefix = app.get_name();
      CLI::App* command = app.get_subcommand(argv[command_at]);
      for (int at = command_at + 1; at < argc; ++at) {
        CLI::App* inner = nullptr;
        for (CLI::App* sub : command->get_subcommands([](const CLI::App*) { return true; }))
          if (sub->get_name() == argv[at]) inner = sub;
        if (inner == nullptr) break;
        prefix += " " + command->get_name();
        command = inner;
      }
      std::cout << command->help(prefix);
      return 0;
    }
  }
  // Parse errors (unknown option, not a number) come from CLI11; their codes vary, we report them as 2.
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitUsage;
  }

  const std::string name = "stx " + app.get_subcommands().front()->get_name();
  if (threads > 0) {
    stx::engine::set_thread_limit(threads);
    stx::engine::use_job_threads();
  }
  // Whatever a command throws comes out of the engine's edge as an engine::Error with one plain line; the
  // flags of the settings it names are added here.
  try {
    return stx::engine::with_plain_errors([&] {
      if (train->parsed()) return stx::cli::run_train_command(train_options, argc, argv);
      if (eval->parsed()) return stx::cli::run_eval_command(eval_options);
      if (info->parsed()) return stx::cli::run_info_command(info_options);
      if (export_model->parsed()) return stx::cli::run_export_command(export_options);
      if (layout->parsed()) return stx::cli::run_layout_command(layout_options);
      if (check->parsed()) return stx::cli::run_check_command(check_options);
      if (sample->parsed()) return stx::cli::run_sample_command(sample_options);
      return kExitFailed;  // unreachable: require_subcommand(1) guarantees one of them parsed
    });
  } catch (const stx::cli::UsageError& e) {
    std::cerr << name << ": " << stx::cli::with_flags(e) << "\n";
    return kExitUsage;
  } catch (const stx::engine::Error& e) {
    std::cerr << name << ": " << stx::cli::with_flags(e) << "\n";
    return kExitFailed;
  }
}
