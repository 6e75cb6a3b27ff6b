// `stx eval` (bits/byte of a model on some data), `stx info` (a model card) and `stx export` (a model folder
// to share or bundle).
#pragma once

#include <cstdint>
#include <string>

#include "sampling_options.h"

namespace CLI {
class App;
}

namespace stx::cli {

struct EvalOptions {
  std::string model;
  std::string data;
  std::string split = "all";
  int64_t windows = 0;  // 0 = every window
  int64_t batch = 8;
  bool sliding = false;  // windows every context/2, each byte scored once after >= context/2 earlier bytes
  bool json = false;
  std::string device = "cpu";  // cpu, cuda or auto (as training: the GPU when there is one)
};

struct InfoOptions {
  std::string model;
  bool json = false;
};

struct ExportOptions {
  std::string model;
  std::string out;
  bool fp16 = false;
  bool force = false;
  SamplingOptions sampling;  // the export's sampling defaults, over the source's
};

CLI::App* add_eval_command(CLI::App& app, EvalOptions& options);
CLI::App* add_info_command(CLI::App& app, InfoOptions& options);
CLI::App* add_export_command(CLI::App& app, ExportOptions& options);
int run_export_command(const ExportOptions& options);
int run_eval_command(const EvalOptions& options);
int run_info_command(const InfoOptions& options);

}  // namespace stx::cli
