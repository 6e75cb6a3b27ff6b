// Fault injection in training (reliability.md, "Tests we keep"): cancel during a save, a run folder that
// turns read-only after the start (training pauses until it is writable again), and the `stx train` process killed at many points while it saves.
// Whatever happens, train() returns, latest.json names a committed checkpoint that loads (holding exactly
// the weights of that step, where the run is deterministic), and resuming from it works.
#include <ATen/ATen.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>
#include <vector>

#include "engine_test_support.h"
#include "stx/engine/checkpoint.h"
#include "stx/engine/trainer.h"

namespace {

using namespace stx::engine;
namespace fs = std::filesystem;

constexpr int64_t kSteps = 6;

// Deterministic (one thread) with dropout, so that weights, optimiser and random generator must all be
// saved exactly for a resume to match; a checkpoint after every step, so that there are many saves to hit.
TrainOptions options(const fs::path& data, const fs::path& out) {
  TrainOptions o = stx::test::tiny_train_options(data, out);
  o.steps = kSteps;
  o.deterministic = true;
  o.model.dropout = 0.1;
  o.checkpoint_every = 1;
  o.keep_last = 2;
  o.save_retry_seconds = 0.05;  // a failed save pauses training and retries this often
  return o;
}

class FaultInjectionTrain : public ::testing::Test {
 protected:
  // The uninterrupted run, keeping every checkpoint: what an interrupted run must have saved at each step.
  static void SetUpTestSuite() {
    reference_ = new stx::test::TempFolder();
    data_ = stx::test::make_text_corpus(*reference_ / "data");
    TrainOptions o = options(data_, *reference_ / "run");
    o.keep_last = 100;
    std::atomic<bool> never{false};
    reference_end_ = train(o, {}, never);
  }
  static void TearDownTestSuite() {
    delete reference_;
    reference_ = nullptr;
  }
  void SetUp() override {
    ASSERT_EQ(reference_end_.outcome, JobEnded::Outcome::completed) << reference_end_.message;
  }

  static fs::path reference_checkpoint(int64_t step) {
    return RunFolder(*reference_ / "run").folder_for(step);
  }

  static void expect_same_weights(const fs::path& folder, const fs::path& expected) {
    const ModelBundle got = load_checkpoint(folder), want = load_checkpoint(expected);
    EXPECT_EQ(got.weights_hash, want.weights_hash)
        << folder << " vs " << expected;  // model.safetensors bytes
    auto want_parameters = want.model->named_parameters();
    std::string differing;
    for (const auto& item : got.model->named_parameters()) {
      if (!at::equal(item.value(), want_parameters[item.key()])) differing += " " + item.key();
    }
    EXPECT_TRUE(differing.empty()) << "in " << folder << ", these parameters differ:" << differing;
  }

  // What an interrupted run must leave behind, checked up to and including a resume to the end.
  void expect_intact_and_resumable(const fs::path& run, int64_t expected_step) {
    const std::optional<fs::path> latest = RunFolder(run).latest();
    ASSERT_TRUE(latest.has_value()) << run << " has no latest.json";
    ASSERT_TRUE(fs::is_directory(*latest)) << "latest.json names " << *latest << ", which does not exist";
    const ModelBundle saved = load_checkpoint(*latest);
    ASSERT_TRUE(saved.state.has_value());
    EXPECT_EQ(saved.state->step, expected_step);
    EXPECT_EQ(latest->filename(), RunFolder(run).folder_for(expected_step).filename());
    expect_same_weights(*latest, reference_checkpoint(expected_step));
    // Staging folders and temporary files are hidden (`.<name>.tmp-...`): none may remain.
    for (const fs::path& folder : {run, run / "checkpoints"}) {
      for (const auto& entry : fs::directory_iterator(folder)) {
        EXPECT_NE(entry.path().filename().string().front(), '.') << "left behind: " << entry.path();
      }
    }

    TrainOptions resumed;
    resumed.resume = run;
    resumed.steps = kSteps;
    resumed.deterministic = true;
    std::atomic<bool> never{false};
    const JobEnded end = train(resumed, {}, never);
    ASSERT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
    expect_same_weights(*RunFolder(run).latest(), reference_checkpoint(kSteps));
  }

  stx::test::TempFolder tmp_;
  static stx::test::TempFolder* reference_;
  static fs::path data_;
  static JobEnded reference_end_;
};

stx::test::TempFolder* FaultInjectionTrain::reference_ = nullptr;
fs::path FaultInjectionTrain::data_;
JobEnded FaultInjectionTrain::reference_end_;

int count_saves(const std::vector<Event>& events, int64_t step) {
  int count = 0;
  for (const Event& e : events) {
    if (auto* saved = std::get_if<CheckpointSaved>(&e); saved && saved->step == step) ++count;
  }
  return count;
}

// Trains into `run`, cancelling from the event handler at the first event `cancel_at` accepts (as the GUI's
// handlers may); returns how the run ended and every event it sent.
std::pair<JobEnded, std::vector<Event>> train_cancelled_at(const fs::path& data, const fs::path& run,
                                                            const std::function<bool(const Event&)>& cancel_at) {
  std::atomic<bool> cancel{false};
  std::vector<Event> events;
  JobEnded end = train(
      options(data, run),
      [&](const Event& e) {
        events.push_back(e);
        if (cancel_at(e)) cancel = true;
      },
      cancel);
  return {end, events};
}

TEST_F(FaultInjectionTrain, CancelInTheCheckpointSavedHandlerKeepsThatCheckpoint) {
  // The GUI reacts to CheckpointSaved; a cancel from there arrives right after a commit.
  const auto [end, events] = train_cancelled_at(data_, tmp_ / "run", [](const Event& e) {
    const auto* saved = std::get_if<CheckpointSaved>(&e);
    return saved && saved->step == 2;
  });

  ASSERT_EQ(end.outcome, JobEnded::Outcome::cancelled) << end.message;
  EXPECT_EQ(end.checkpoint, RunFolder(tmp_ / "run").folder_for(2));
  EXPECT_EQ(count_saves(events, 2), 1) << "the step just saved is not saved again as the final checkpoint";
  expect_intact_and_resumable(tmp_ / "run", 2);
}

TEST_F(FaultInjectionTrain, CancelOnAStepThatSavesSavesThatStepOnce) {
  // Cancelled after step 3's optimiser step but before its validation and save.
  const auto [end, events] = train_cancelled_at(data_, tmp_ / "run", [](const Event& e) {
    const auto* progress = std::get_if<TrainProgress>(&e);
    return progress && progress->step == 3;
  });

  ASSERT_EQ(end.outcome, JobEnded::Outcome::cancelled) << end.message;
  EXPECT_EQ(end.checkpoint, RunFolder(tmp_ / "run").folder_for(3));
  EXPECT_EQ(count_saves(events, 3), 1);
  EXPECT_EQ(count_saves(events, 4), 0) << "no step is taken after the cancel";
  expect_intact_and_resumable(tmp_ / "run", 3);
}

TEST_F(FaultInjectionTrain, CancelWhileAStagingFolderExistsEndsWithACommittedCheckpoint) {
  // A watcher thread cancels the moment it sees a checkpoint being staged, as a user's click would.
  const fs::path run = tmp_ / "run";
  std::atomic<bool> cancel{false}, done{false};
  std::string seen;
  std::thread watcher([&] {
    while (!done && !cancel) {
      std::error_code ec;
      for (fs::directory_iterator it(run / "checkpoints", ec), end; !ec && it != end; it.increment(ec)) {
        if (it->path().filename().string().rfind(".step-", 0) == 0) {
          seen = it->path().filename().string();
          cancel = true;
          break;
        }
      }
    }
  });
  int64_t last_step = 0;
  const JobEnded end = train(
      options(data_, run),
      [&](const Event& e) {
        if (auto* progress = std::get_if<TrainProgress>(&e)) last_step = progress->step;
      },
      cancel);
  done = true;
  watcher.join();

  ASSERT_FALSE(seen.empty()) << "the watcher never saw a staging folder, so no cancel landed in a save";
  ASSERT_EQ(end.outcome, JobEnded::Outcome::cancelled)
      << end.message << " (cancelled while " << seen << " existed)";
  EXPECT_EQ(end.checkpoint, RunFolder(run).folder_for(last_step));
  expect_intact_and_resumable(run, last_step);
}

// Makes folders read-only for everyone, root included: root ignores the mode bits, so as root this sets the
// immutable attribute (chattr +i) instead of chmod 0500. undo() (also on destruction) restores them.
class ReadOnlyFolders {
 public:
  ReadOnlyFolders() = default;
  ReadOnlyFolders(const ReadOnlyFolders&) = delete;
  ReadOnlyFolders& operator=(const ReadOnlyFolders&) = delete;
  ~ReadOnlyFolders() { undo(); }

  // Returns "" or why this folder cannot be made read-only here.
  std::string make_read_only(const fs::path& folder) {
    if (::geteuid() != 0) {
      std::error_code ec;
      const fs::perms mode = fs::status(folder, ec).permissions();
      if (!ec) fs::permissions(folder, fs::perms::owner_read | fs::perms::owner_exec, ec);
      if (ec) return "chmod " + folder.string() + ": " + ec.message();
      modes_.emplace_back(folder, mode);
      return "";
    }
    int flags = 0;
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool read = fd >= 0 && ::ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0;
    const std::string why =
        read ? "" : "cannot read the attributes of " + folder.string() + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    if (!why.empty()) return why;
    if (const std::string failed = set_flags(folder, flags | FS_IMMUTABLE_FL); !failed.empty()) return failed;
    flags_.emplace_back(folder, flags);
    return "";
  }

  void undo() {
    for (auto it = flags_.rbegin(); it != flags_.rend(); ++it) set_flags(it->first, it->second);
    for (auto it = modes_.rbegin(); it != modes_.rend(); ++it) {
      std::error_code ignored;
      fs::permissions(it->first, it->second, ignored);
    }
    flags_.clear();
    modes_.clear();
  }

 private:
  static std::string set_flags(const fs::path& folder, int flags) {
    const int fd = ::open(folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    const bool ok = fd >= 0 && ::ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0;
    const std::string why = ok ? "" : "chattr " + folder.string() + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    return why;
  }
  std::vector<std::pair<fs::path, int>> flags_;
  std::vector<std::pair<fs::path, fs::perms>> modes_;
};

// A run folder that turns read-only pauses training at the first save that fails (reliability.md: "training
// paused, not crashed"). Made writable again, the same save goes through and the run finishes exactly like
// the uninterrupted one; stopped while paused, it ends at the last checkpoint saved.
TEST_F(FaultInjectionTrain, RunFolderTurnedReadOnlyPausesTrainingUntilItIsWritableAgain) {
  {  // Can this file system and user make a folder read-only at all?
    fs::create_directories(tmp_ / "probe");
    ReadOnlyFolders probe;
    if (const std::string why = probe.make_read_only(tmp_ / "probe"); !why.empty()) {
      GTEST_SKIP() << "cannot make a folder read-only here: " << why;
    }
  }
  for (const bool stop_while_paused : {false, true}) {
    SCOPED_TRACE(stop_while_paused ? "stopped while paused" : "made writable while paused");
    const fs::path run = tmp_ / (stop_while_paused ? "run-stopped" : "run-resumed");
    ReadOnlyFolders read_only;  // destroyed before tmp_, so the folder can be removed afterwards
    std::string setup_error;
    std::vector<std::string> errors, notes;
    int failed_attempts = 0;
    std::atomic<bool> cancel{false};
    const JobEnded end = train(
        options(data_, run),
        [&](const Event& e) {
          if (auto* saved = std::get_if<CheckpointSaved>(&e); saved && saved->step == 2) {
            setup_error = read_only.make_read_only(run / "checkpoints") + read_only.make_read_only(run);
          }
          if (auto* line = std::get_if<LogLine>(&e)) {
            if (line->level == LogLine::Level::error) errors.push_back(line->text);
            if (line->level != LogLine::Level::error) notes.push_back(line->text);
            // Let the save fail twice while paused, then fix the folder (or stop the run).
            if (line->level == LogLine::Level::error && ++failed_attempts == 3) {
              if (stop_while_paused) {
                cancel = true;
              } else {
                read_only.undo();
              }
            }
          }
        },
        cancel);
    ASSERT_TRUE(setup_error.empty()) << setup_error;
    ASSERT_GE(errors.size(), 3u);
    const std::string reason = std::strerror(::geteuid() == 0 ? EPERM : EACCES);
    const std::string step3 = RunFolder(run).folder_for(3).string();
    EXPECT_NE(errors.front().find("checkpoint at step 3 was not saved: cannot create " + step3 + ": " + reason),
              std::string::npos)
        << errors.front();
    const auto has_note = [&](const std::string& text) {
      return std::any_of(notes.begin(), notes.end(), [&](const std::string& n) { return n.find(text) != std::string::npos; });
    };
    EXPECT_TRUE(has_note("training paused")) << "no pause was announced";
    read_only.undo();  // writable again, for the checks and the resume
    if (stop_while_paused) {
      // Stopped without saving the last steps: not the "stopped after saving" of a cancel (exit 130).
      EXPECT_EQ(end.outcome, JobEnded::Outcome::failed) << end.message;
      EXPECT_NE(end.message.find("stopped at step 3, which could not be saved"), std::string::npos) << end.message;
      EXPECT_NE(end.message.find("the last saved checkpoint is " + RunFolder(run).folder_for(2).string()),
                std::string::npos)
          << end.message;
      EXPECT_EQ(end.checkpoint.filename(), RunFolder(run).folder_for(2).filename());
      expect_intact_and_resumable(run, 2);
    } else {
      EXPECT_EQ(end.outcome, JobEnded::Outcome::completed) << end.message;
      EXPECT_TRUE(has_note("checkpoint at step 3 saved after all")) << "no resume was announced";
      expect_intact_and_resumable(run, kSteps);  // every step saved; the resume has nothing left to do
    }
  }
}

#ifdef STX_CLI_PATH

// Starts `stx <arguments>` (split at spaces: the test's paths hold none) with its output thrown away.
// exec follows fork at once, so the threads of this process do not matter.
pid_t start_stx(const std::string& arguments) {
  std::vector<std::string> words = {STX_CLI_PATH};
  std::istringstream split(arguments);
  for (std::string word; split >> word;) words.push_back(word);
  std::vector<char*> argv;
  for (std::string& word : words) argv.push_back(word.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    ::dup2(null, 0);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The step latest.json names, or -1 while there is none.
int64_t latest_step(const fs::path& run) {
  const std::optional<fs::path> latest = RunFolder(run).latest();
  return latest ? std::stoll(latest->filename().string().substr(5)) : -1;
}

// Whether process `pid` is staging a checkpoint now (its staging folder is named `.step-N.tmp-<pid>-...`).
bool staging_started(const fs::path& run, pid_t pid) {
  const std::string marker = ".tmp-" + std::to_string(pid) + "-";
  std::error_code ec;
  for (fs::directory_iterator it(run / "checkpoints", ec), end; !ec && it != end; it.increment(ec)) {
    if (it->path().filename().string().find(marker) != std::string::npos) return true;
  }
  return false;
}

TEST_F(FaultInjectionTrain, KilledTrainerProcessLeavesALoadableLatestCheckpoint) {
  // `stx train` saves after every step; it is SIGKILLed at varied moments in and around a save, then
  // resumed, again and again. Each time the checkpoint that latest.json names must load, and every
  // leftover must be a documented temporary of a killed process.
  constexpr int kTrials = 10;
  const fs::path run = tmp_ / "run";
  nlohmann::json config = stx::models::to_json(stx::test::tiny_text_config());
  config["training"] = {{"warmup_steps", 2}, {"eval_windows", 2}, {"validation_fraction", 0.5}};
  std::ofstream(tmp_ / "tiny.json") << config.dump();
  std::set<std::string> killed;
  int64_t step_before = -1;
  int killed_while_staging = 0;
  for (int trial = 0; trial < kTrials; ++trial) {
    const pid_t pid = start_stx(trial > 0 ? "train --resume " + run.string() + " --steps 100000"
                                          : "train --config " + (tmp_ / "tiny.json").string() + " --data " +
                                                data_.string() + " --out " + run.string() +
                                                " --steps 100000 --batch 2 --checkpoint-every 1 --keep 2");
    ASSERT_GT(pid, 0);
    killed.insert(std::to_string(pid));
    // Wait for a checkpoint newer than the last trial's, then for the next save to start staging, then
    // kill at a deterministic pseudo-random moment within about one step and its save (~10-30 ms here).
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    int status = 0;
    bool reaped = false;  // it ended by itself: its pid must not be signalled any more
    const auto running = [&] {
      reaped = reaped || ::waitpid(pid, &status, WNOHANG) == pid;
      return !reaped && std::chrono::steady_clock::now() < deadline;
    };
    while (latest_step(run) <= step_before && running()) {
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    while (!staging_started(run, pid) && running()) {
    }
    std::mt19937 seeded(static_cast<unsigned>(trial) + 1);
    std::this_thread::sleep_for(std::chrono::microseconds(seeded() % 30000));
    if (!reaped && ::kill(pid, SIGKILL) == 0) ::waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFSIGNALED(status)) << "trial " << trial << ": stx train ended by itself, status " << status;
    ASSERT_GT(latest_step(run), step_before) << "trial " << trial << ": no new checkpoint within 30 s";

    const fs::path latest = *RunFolder(run).latest();
    std::optional<ModelBundle> loaded;
    ASSERT_NO_THROW(loaded = load_checkpoint(latest)) << "trial " << trial << ": " << latest;
    ASSERT_TRUE(loaded->state.has_value());
    EXPECT_EQ(loaded->state->step, latest_step(run));
    ASSERT_NO_THROW(load_checkpoint(*RunFolder(run).best()));
    step_before = latest_step(run);

    std::string pids;
    for (const std::string& p : killed) pids += (pids.empty() ? "" : "|") + p;
    const std::regex checkpoint("step-[0-9]{8}");
    // Temporaries of killed processes, and a checkpoint that retention had renamed away before deleting it.
    const std::regex temporary("\\.(latest\\.json|step-[0-9]{8})\\.tmp-(" + pids + ")-[0-9a-f]{8}|\\.deleting-step-[0-9]{8}");
    for (const fs::path& folder : {run, run / "checkpoints"}) {
      for (const auto& entry : fs::directory_iterator(folder)) {
        const std::string name = entry.path().filename().string();
        if (name == "latest.json" || name == "checkpoints" || std::regex_match(name, checkpoint)) continue;
        EXPECT_TRUE(std::regex_match(name, temporary))
            << "trial " << trial << ": unexpected " << entry.path();
      }
    }
    if (staging_started(run, pid)) ++killed_while_staging;
  }
  // The test proves something only if kills really landed inside saves.
  EXPECT_GT(killed_while_staging, 0);
  // Leftovers do not stop the run: it resumes and finishes.
  const pid_t pid =
      start_stx("train --resume " + run.string() + " --steps " + std::to_string(step_before + 2));
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(latest_step(run), step_before + 2);
  // Its saves cleared every leftover of the killed processes.
  for (const fs::path& folder : {run, run / "checkpoints"}) {
    for (const auto& entry : fs::directory_iterator(folder)) {
      EXPECT_NE(entry.path().filename().string()[0], '.') << "leftover " << entry.path();
    }
  }
}

#endif  // STX_CLI_PATH

}  // namespace
