// export_model: a checkpoint turned into a model folder to share or bundle (fp16 weights, no optimiser state).
#include <unistd.h>

#include <string>
#include <system_error>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/error.h"

namespace stx::engine {
namespace fs = std::filesystem;

void export_model(const fs::path& source, const fs::path& target, bool fp16_weights, bool replace,
                  const std::optional<SamplingSettings>& sampling) {
  if (sampling) sampling->validate();
  const fs::path resolved = resolve_checkpoint(source);
  std::error_code ec;
  const bool exists = fs::exists(target, ec);
  if (exists && fs::equivalent(target, source, ec)) {
    throw Error("cannot export " + source.string() + " onto itself; choose another folder");
  }
  if (exists && fs::equivalent(target, resolved, ec)) {
    throw Error("cannot export " + source.string() + " onto its own checkpoint " + resolved.string() +
                "; choose another folder");
  }
  if (exists && fs::exists(target / "train_state.safetensors", ec)) {
    // A training checkpoint: an export holds no optimiser state, so replacing it would end its run.
    throw Error(target.string() + " is a training checkpoint (it holds the optimiser state a resume needs); "
                "it is never replaced by an export: choose another folder");
  }
  if (exists && !replace) throw Error(target.string() + " already exists; choose another folder or replace it");
  if (exists && !fs::exists(target / "config.json", ec)) {
    // Replacing is for models; a folder of something else is never moved aside.
    throw Error(target.string() + " exists and is not a model folder (no config.json); nothing was written");
  }
  ModelBundle bundle = load_checkpoint(resolved);
  if (!target.parent_path().empty()) fs::create_directories(target.parent_path(), ec);

  StagingDirectory staging(target);
  TrainState record;
  const TrainState* state = nullptr;
  if (bundle.state) {
    record = *bundle.state;
    state = &record;
  }
  try {
    write_checkpoint_files(staging.path(), bundle.config, bundle.training, sampling.value_or(bundle.sampling), bundle.model, state, nullptr, fp16_weights);
  } catch (const Error& e) {
    // The user asked for `target`: name it, not the hidden staging folder beside it (removed on the way out).
    std::string reason = e.what();
    const std::string hidden = staging.path().string();
    for (size_t at = reason.find(hidden); at != std::string::npos; at = reason.find(hidden, at)) {
      reason.replace(at, hidden.size(), target.string());
      at += target.string().size();
    }
    throw Error("cannot export to " + target.string() + " (nothing was written there): " + reason);
  }
  if (!exists) {
    staging.commit();
    return;
  }
  const fs::path aside = target.parent_path() / ("." + target.filename().string() + ".replaced-" +
                                                 std::to_string(static_cast<long long>(::getpid())));
  fs::rename(target, aside, ec);
  if (ec) throw Error("cannot replace " + target.string() + ": " + ec.message());
  try {
    staging.commit();
  } catch (...) {
    std::error_code restore_error;
    fs::rename(aside, target, restore_error);
    throw;
  }
  fs::remove_all(aside, ec);  // the new model is in place; a leftover here is only wasted space
}

}  // namespace stx::engine
