// Where this process sits in a data-parallel run: plain values, no torch (trainer.h needs them, and the
// studio includes trainer.h). distributed.h (private to the engine) connects the processes.
#pragma once

#include <string>

namespace stx::engine {

struct DistributedSettings {
  int rank = 0;
  int world_size = 1;
  std::string master_addr = "127.0.0.1";
  int master_port = 29500;
  // From RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; world_size 1 when WORLD_SIZE is unset. Throws
  // stx::engine::Error for values out of range.
  static DistributedSettings from_environment();
  // True when this process was started as one of a run's processes (RANK is set).
  static bool started_as_worker();
  // Sets RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for a program this process starts: a launcher calls
  // it between fork and exec, and the program reads them back with from_environment().
  void to_environment() const;
};

}  // namespace stx::engine
