#include "stx/models/thread_count_chooser.h"

#include <algorithm>
#include <atomic>

namespace stx::models {
namespace {

// The count the last decision settled on, in any chooser of this process: other work on the machine
// outlives one sample, so the next sample starts from it (its first cycle checks it within a few steps).
std::atomic<int> last_settled{0};

}  // namespace

// More threads must win by more than fewer: beside other programs more threads can lose many times over
// when the load shifts (every meeting waits for a thread without a core), fewer lose at most their share.
double ThreadCountChooser::switch_ratio() const { return trial_ > best_ ? kSwitchUpRatio : kSwitchRatio; }

void ThreadCountChooser::start_cycle() {
  trying_ = false;
  rechecking_ = false;
  run_ = {};
  block_ = {};
  trial_span_ = {};
  trial_slow_steps_ = 0;
  slowed_down_ = false;
}

// Half or twice the settled count, alternating, within 1..most (the ladder 1, 2, 4, ... ends at most).
int ThreadCountChooser::neighbour() {
  for (int attempt = 0; attempt < 2; ++attempt) {
    const bool fewer = try_fewer_;
    try_fewer_ = !try_fewer_;
    if (fewer && best_ > 1) return std::max(1, best_ / 2);
    if (!fewer && best_ < most_) return std::min(most_, best_ * 2);
  }
  return best_;
}

int ThreadCountChooser::next(int most) {
  most = std::max(1, most);
  if (most != most_) {
    most_ = most;
    const int hint = last_settled.load(std::memory_order_relaxed);
    best_ = hint >= 1 && hint <= most ? hint : most;
    cycle_seconds_ = kFirstCycleSeconds;
    first_cycle_ = true;
    warmup_left_ = kWarmupSteps;
    reference_ = 0;
    start_cycle();
  }
  if (most_ == 1) return 1;
  if (!trying_ && !rechecking_ && run_.steps >= (first_cycle_ ? kFirstCycleSteps : kTrialSteps) &&
      (run_.seconds >= cycle_seconds_ || slowed_down_)) {
    trial_ = neighbour();
    if (trial_ == best_) {
      start_cycle();
    } else {
      trying_ = true;
      trial_warmup_left_ = 1;  // the first step on a new count wakes or starts threads
    }
  }
  return trying_ ? trial_ : best_;
}

void ThreadCountChooser::record(double seconds) {
  if (most_ <= 1) return;
  if (warmup_left_ > 0) {  // a new decoder's first steps touch fresh memory: no count is that slow
    --warmup_left_;
    return;
  }
  if (rechecking_) {
    recheck_span_.add(seconds);
    const bool confirmed = recheck_span_.steps == kAbortAfter && recheck_span_.seconds > 2 * kAbortAfter * trial_mean_;
    if (!confirmed && (recheck_span_.steps < kTrialSteps || recheck_span_.seconds < kTrialSeconds)) return;
    decide(confirmed || trial_mean_ < switch_ratio() * recheck_span_.mean());
    return;
  }
  if (!trying_) {
    run_.add(seconds);
    block_.add(seconds);
    if (block_.steps >= kBlockSteps && block_.seconds >= kBlockSeconds) {
      if (reference_ > 0 && block_.mean() > kSlowDown * reference_) {
        slowed_down_ = true;
        run_ = block_;  // the trial is held against the rate now, not the cycle's
      }
      block_ = {};
    }
    return;
  }
  if (trial_warmup_left_ > 0) {
    --trial_warmup_left_;
    return;
  }
  trial_span_.add(seconds);
  const double settled = run_.mean();
  if (seconds > 2 * settled) ++trial_slow_steps_;
  const bool lost = trial_span_.steps == kAbortAfter && trial_slow_steps_ == kAbortAfter;
  if (!lost && (trial_span_.steps < kTrialSteps || trial_span_.seconds < kTrialSeconds)) return;
  if (!lost && trial_span_.mean() < switch_ratio() * settled) {
    // It looks faster, but the settled count may have been slowed by something that has passed (a burst of
    // painting, another program's short job): measure it again, now, before switching.
    trial_mean_ = trial_span_.mean();
    trying_ = false;
    rechecking_ = true;
    recheck_span_ = {};
    return;
  }
  decide(false);
}

void ThreadCountChooser::decide(bool switch_to_trial) {
  if (switch_to_trial) {
    best_ = trial_;
    reference_ = trial_mean_;
    cycle_seconds_ = kCycleSeconds;
  } else {
    // A neighbour that lost again is tried less often: on a machine whose load holds still, the trials cost
    // next to nothing. A change of load is caught by the slow-down check instead.
    reference_ = rechecking_ ? recheck_span_.mean() : run_.mean();
    cycle_seconds_ = std::clamp(2 * cycle_seconds_, kCycleSeconds, kLongestCycleSeconds);
  }
  first_cycle_ = false;
  last_settled.store(best_, std::memory_order_relaxed);
  start_cycle();
}

}  // namespace stx::models
