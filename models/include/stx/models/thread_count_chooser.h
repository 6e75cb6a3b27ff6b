// How many threads a decoder step runs on, chosen by timing steps as they run.
//
// One step of a small batch is well under a millisecond, and its threads meet about 20 times in it. On an
// idle machine two threads beat one by 1.7x; with one other busy thread on a 2-core machine, one of the two
// keeps losing its core, every meeting waits for a scheduler time slice, and two threads ran 9x slower than
// alone, while one thread alone on the free core lost nothing (docs/benchmarks.md, "A busy machine").
// Which is faster depends on what else runs, and that changes while a sample is drawn, so the decoder
// keeps measuring: it runs the count that has been fastest, and now and then tries a neighbouring count
// (half or twice as many) for a short while; the neighbour takes over when its mean step is clearly faster.
// Means, not medians: beside other programs most steps may be fast while a few wait a whole scheduler time
// slice for a thread that lost its core, and those few decide the rate. The logits do not depend on the
// thread count, so a switch changes nothing but the time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace stx::models {

class ThreadCountChooser {
 public:
  // The thread count for the next step, between 1 and `most` (the user's setting or the machine's cores).
  // A new `most` starts over from it.
  int next(int most);
  // The wall time of the step that ran on next()'s last answer.
  void record(double seconds);

  // The count steps run on when not trying another, 0 before the first next().
  int settled() const { return best_; }

  // A chooser starts from the count that the last decision of any chooser in this process settled on (the
  // load of the machine outlives one sample), or from `most`.
  // A cycle: the settled count for cycle_seconds_ (the first time, kFirstCycleSeconds and at least
  // kFirstCycleSteps steps; then at least kTrialSteps), then the neighbour
  // for one warm-up step and at least kTrialSteps steps and kTrialSeconds. A neighbour whose mean step is at
  // most kSwitchRatio (kSwitchUpRatio for more threads) of the settled count's mean over the cycle is held against the settled count measured
  // again, as long, right after it (what slowed the cycle may have passed), and takes over if it still
  // wins. One whose first kAbortAfter steps each took twice that mean loses at once; a recheck whose first
  // kAbortAfter steps took twice the neighbour's mean each confirms it at once. A new chooser ignores its
  // first kWarmupSteps steps. A neighbour that lost waits twice as long for
  // its next trial, up to kLongestCycleSeconds. While running, a block of at least kBlockSteps steps and
  // kBlockSeconds whose mean is kSlowDown times the last mean starts a trial at once (the load changed).
  static constexpr int kWarmupSteps = 2;
  static constexpr double kFirstCycleSeconds = 0.005;
  static constexpr int kFirstCycleSteps = 3;
  static constexpr double kCycleSeconds = 0.2;
  static constexpr double kLongestCycleSeconds = 1.6;
  static constexpr int kTrialSteps = 6;
  static constexpr double kTrialSeconds = 0.04;
  static constexpr int kAbortAfter = 2;
  static constexpr double kSwitchRatio = 0.9;
  static constexpr double kSwitchUpRatio = 0.75;  // to more threads than the settled count
  static constexpr int kBlockSteps = 16;
  static constexpr double kBlockSeconds = 0.02;
  static constexpr double kSlowDown = 1.5;

 private:
  struct Span {  // steps timed together
    double seconds = 0;
    int steps = 0;
    void add(double s) {
      seconds += s;
      ++steps;
    }
    double mean() const { return steps > 0 ? seconds / steps : 0; }
  };
  void start_cycle();
  void decide(bool switch_to_trial);
  double switch_ratio() const;
  int neighbour();

  int most_ = 0, best_ = 0, trial_ = 0;
  bool try_fewer_ = true;  // the direction of the next trial; alternates
  bool trying_ = false, rechecking_ = false;
  int warmup_left_ = 0;
  double trial_mean_ = 0;
  Span recheck_span_;
  int trial_warmup_left_ = 0;
  double cycle_seconds_ = 0;
  double reference_ = 0;  // the settled count's mean step when last measured; 0: none yet
  Span run_, trial_span_, block_;
  int trial_slow_steps_ = 0;
  bool slowed_down_ = false;
  bool first_cycle_ = true;
};

}  // namespace stx::models
