// A training run's folder: checkpoints/step-NNNNNNNN/ folders, each committed by one rename, and
// latest.json naming the latest and the best, written last. Retention orders by step (the number in the
// name, never the mtime) and deletes only after the new checkpoint is committed.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <set>

#include "stx/engine/io/atomic_file.h"
#include "stx/engine/checkpoint.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include "stx/engine/error.h"

namespace stx::engine {
namespace fs = std::filesystem;

namespace {

constexpr const char* kLatestFile = "latest.json";
constexpr const char* kCheckpointsFolder = "checkpoints";

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step-%08lld", static_cast<long long>(step));
  return name;
}

// The step of a folder named step-NNNNNNNN, or -1.
int64_t parse_step(const std::string& name) {
  if (name.size() < 6 || name.compare(0, 5, "step-") != 0) return -1;
  int64_t step = 0;
  for (size_t i = 5; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || step > (int64_t{1} << 50)) return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

// A relative path from latest.json, accepted only when it names checkpoints/<step-name> under the root.
std::optional<fs::path> checked_entry(const fs::path& root, const nlohmann::json& json, const char* key) {
  const auto it = json.find(key);
  if (it == json.end() && std::string(key) == "best") return std::nullopt;  // a run without a validation yet
  if (it == json.end() || !it->is_string()) {
    throw Error((root / kLatestFile).string() + ": '" + key + "' must name a checkpoint of this run, as a string");
  }
  const fs::path relative = it->get<std::string>();
  if (relative.parent_path() != kCheckpointsFolder || parse_step(relative.filename().string()) < 0) {
    throw Error((root / kLatestFile).string() + ": '" + relative.string() + "' is not a checkpoint of this run");
  }
  return root / relative;
}

}  // namespace

RunFolder::RunFolder(fs::path root) : root_(std::move(root)) {}

fs::path RunFolder::folder_for(int64_t step) const { return root_ / kCheckpointsFolder / step_name(step); }

std::optional<fs::path> RunFolder::latest() const {
  std::error_code ec;
  if (!fs::exists(root_ / kLatestFile, ec)) return std::nullopt;
  const std::vector<uint8_t> bytes = read_file(root_ / kLatestFile, 1 << 20);
  const auto json = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw Error((root_ / kLatestFile).string() + ": not valid JSON");
  return checked_entry(root_, json, "latest");
}

std::optional<fs::path> RunFolder::best() const {
  std::error_code ec;
  if (!fs::exists(root_ / kLatestFile, ec)) return std::nullopt;
  const std::vector<uint8_t> bytes = read_file(root_ / kLatestFile, 1 << 20);
  const auto json = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) throw Error((root_ / kLatestFile).string() + ": not valid JSON");
  auto best = checked_entry(root_, json, "best");
  return best ? best : checked_entry(root_, json, "latest");
}

void RunFolder::write_latest(const std::string& latest, const std::string& best) const {
  nlohmann::json json = {{"latest", latest}};
  if (!best.empty()) json["best"] = best;
  write_file_atomic(root_ / kLatestFile, json.dump(2) + "\n");
}

void RunFolder::check_can_create() const {
  // The deepest part of the path that exists must be a folder this process may add to; the rest is made at
  // the first save. Nothing is created here, so a run refused later leaves nothing behind.
  // Saves add to checkpoints/, so that is where the walk up starts.
  fs::path existing = root_ / kCheckpointsFolder;
  std::error_code ec;
  while (!fs::exists(existing, ec) && existing.has_parent_path() && existing.parent_path() != existing) {
    existing = existing.parent_path();
  }
  if (!fs::exists(existing, ec)) existing = ".";  // a relative path whose first part is missing
  const std::string failure = "cannot create the run folder " + root_.string() + ": ";
  if (!fs::is_directory(existing, ec)) throw Error(failure + existing.string() + " is not a folder");
  if (::access(existing.c_str(), W_OK | X_OK) != 0) {
    const int error = errno;
    throw Error(failure + "cannot add to " + existing.string() + " (" + std::strerror(error) + ")");
  }
}

namespace {

// A hidden leftover of a process that died mid-write: ".<name>.tmp-<pid>-<hex>" (atomic_file.cpp) whose
// pid is gone, or ".deleting-<name>" (below). Entries of a live process are left to it.
bool is_stale_leftover(const std::string& name) {
  if (name.rfind(".deleting-", 0) == 0) return true;
  const size_t at = name.find(".tmp-");
  if (name.empty() || name[0] != '.' || at == std::string::npos) return false;
  char* end = nullptr;
  const long pid = std::strtol(name.c_str() + at + 5, &end, 10);
  if (pid <= 0 || end == nullptr || *end != '-') return false;
  return ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH;
}

void remove_stale_leftovers(const fs::path& folder) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    if (is_stale_leftover(entry.path().filename().string())) fs::remove_all(entry.path(), ec);
  }
}

}  // namespace

fs::path RunFolder::commit(int64_t step, bool is_best, int keep_last,
                           const std::function<void(const fs::path& staging)>& write_files) {
  std::error_code ec;
  fs::create_directories(root_ / kCheckpointsFolder, ec);
  if (ec) throw Error("cannot create " + (root_ / kCheckpointsFolder).string() + ": " + ec.message());
  // Before writing, not only after a save that worked: on a full disk, the staging folder of a save that was
  // killed takes the room this save needs, and no save would ever succeed to clear it.
  remove_stale_leftovers(root_);
  remove_stale_leftovers(root_ / kCheckpointsFolder);
  const fs::path target = folder_for(step);
  // A checkpoint of this step is already committed (a resumed run stopped before taking a step): it
  // holds the same state, so it is kept as it is rather than replaced.
  if (!fs::exists(target, ec)) {
    StagingDirectory staging(target);
    write_files(staging.path());
    staging.commit();
  }

  const std::string relative = (fs::path(kCheckpointsFolder) / step_name(step)).string();
  std::string best_relative;
  if (is_best) {
    best_relative = relative;
  } else if (auto best_folder = best()) {
    best_relative = (fs::path(kCheckpointsFolder) / best_folder->filename()).string();
  }
  write_latest(relative, best_relative);
  apply_retention(keep_last);
  return target;
}


void RunFolder::apply_retention(int keep_last) const {
  // Staging folders and temporaries of runs killed mid-save would otherwise stay forever, each as large
  // as a checkpoint.
  remove_stale_leftovers(root_);
  remove_stale_leftovers(root_ / kCheckpointsFolder);
  if (keep_last < 1) keep_last = 1;
  std::set<fs::path> keep;
  if (auto l = latest()) keep.insert(*l);
  if (auto b = best()) keep.insert(*b);
  std::vector<std::pair<int64_t, fs::path>> checkpoints;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(root_ / kCheckpointsFolder, ec)) {
    const int64_t step = parse_step(entry.path().filename().string());
    if (step >= 0 && entry.is_directory(ec)) checkpoints.emplace_back(step, entry.path());
  }
  std::sort(checkpoints.begin(), checkpoints.end());
  const size_t count = checkpoints.size();
  for (size_t i = 0; i < count; ++i) {
    const bool among_last = i + static_cast<size_t>(keep_last) >= count;
    if (among_last || keep.count(checkpoints[i].second)) continue;
    // Renamed out of sight first, so that a crash mid-delete never leaves a half folder that looks like a
    // checkpoint; a leftover ".deleting-" folder is removed next time.
    const fs::path doomed = checkpoints[i].second.parent_path() / (".deleting-" + checkpoints[i].second.filename().string());
    fs::rename(checkpoints[i].second, doomed, ec);
    fs::remove_all(ec ? checkpoints[i].second : doomed, ec);  // best effort: a leftover folder is harmless
  }
}

}  // namespace stx::engine
