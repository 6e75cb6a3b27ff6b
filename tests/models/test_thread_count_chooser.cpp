// ThreadCountChooser (stx/models/thread_count_chooser.h): fed step times of a simulated machine, it must
// settle on the count that is fastest there, move when the load changes, and spend little time on trials.
#include <gtest/gtest.h>

#include <functional>

#include "stx/models/thread_count_chooser.h"

namespace {

using stx::models::ThreadCountChooser;

struct Outcome {
  int settled = 0;
  double seconds = 0;  // simulated wall time of all the steps
  int steps_on[9] = {};
};

// Runs `steps` steps (or fewer, as many as fit in `seconds`), each taking step_seconds(count) for the count
// the chooser asked for.
Outcome simulate(ThreadCountChooser& chooser, int most, int steps, const std::function<double(int)>& step_seconds,
                 double seconds = 1e9) {
  Outcome o;
  for (int k = 0; k < steps && o.seconds < seconds; ++k) {
    const int count = chooser.next(most);
    EXPECT_GE(count, 1);
    EXPECT_LE(count, most);
    const double s = step_seconds(count);
    chooser.record(s);
    o.seconds += s;
    ++o.steps_on[count];
  }
  o.settled = chooser.settled();
  return o;
}

// An idle 2-core machine: two threads 1.7x faster than one.
double idle(int count) { return count == 2 ? 0.15e-3 : 0.26e-3; }
// One other busy program: two threads wait at every meeting, one thread keeps its speed.
double busy(int count) { return count == 2 ? 1.4e-3 : 0.26e-3; }

TEST(ThreadCountChooser, OneCoreNeverTriesMore) {
  ThreadCountChooser chooser;
  const Outcome o = simulate(chooser, 1, 1000, idle);
  EXPECT_EQ(o.settled, 1);
  EXPECT_EQ(o.steps_on[1], 1000);
}

TEST(ThreadCountChooser, SettlesOnTheFasterCountAndStaysThere) {
  for (auto machine : {idle, busy}) {
    ThreadCountChooser chooser;
    const int fast = machine(2) < machine(1) ? 2 : 1;
    simulate(chooser, 2, 200, machine);  // finds it whichever count it started from
    ASSERT_EQ(chooser.settled(), fast);
    // Ten seconds more: trials of the slower count cost at most 3% of the time.
    const int steps = static_cast<int>(10 / machine(fast));
    const Outcome o = simulate(chooser, 2, steps, machine);
    EXPECT_EQ(o.settled, fast);
    EXPECT_LT(o.seconds, 1.03 * steps * machine(fast));
  }
}

TEST(ThreadCountChooser, FollowsTheLoadAsItChanges) {
  ThreadCountChooser chooser;
  simulate(chooser, 2, 2000, idle);
  ASSERT_EQ(chooser.settled(), 2);
  // Another program starts: within 0.15 s the chooser is on one thread.
  Outcome o = simulate(chooser, 2, 1 << 30, busy, 0.15);
  EXPECT_EQ(o.settled, 1);
  simulate(chooser, 2, 4000, busy);
  // It ends: back on two threads within the longest wait between trials (1.6 s) and a trial.
  o = simulate(chooser, 2, 1 << 30, idle, 1.8);
  EXPECT_EQ(o.settled, 2);
}

TEST(ThreadCountChooser, MeansNotMediansDecide) {
  // Beside two busy programs, most two-thread steps are fast but one in eight waits a 10 ms time slice:
  // two threads average 1.4 ms a step against 0.5 ms for one.
  int step = 0;
  auto stalls = [&](int count) {
    if (count == 1) return 0.5e-3;
    return ++step % 8 == 0 ? 10e-3 : 0.2e-3;
  };
  ThreadCountChooser chooser;
  simulate(chooser, 2, 4000, stalls);
  EXPECT_EQ(chooser.settled(), 1);
}

TEST(ThreadCountChooser, ClimbsTheLadderOnManyCores) {
  // 16 cores, four of them busy: 8 threads fastest, 16 collapse, fewer scale down.
  auto machine = [](int count) {
    if (count > 12) return 5e-3;
    return 1e-3 / count;
  };
  ThreadCountChooser chooser;
  simulate(chooser, 16, 20000, machine);
  EXPECT_EQ(chooser.settled(), 8);
}

}  // namespace
