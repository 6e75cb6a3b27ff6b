// A block of work on a CUDA device captured once as a CUDA graph and then replayed: what turns a decode
// step's sixty-odd small launches, each with its CPU-side cost in LibTorch, into one graph launch per block
// of steps (decode_graph.h in the engine uses it).
//
//   stx::models::CapturedWork graph;
//   if (graph.capture(device, [&] { /* launches on tensors allocated before, or during the capture */ })) {
//     graph.replay();   // the same launches on the same memory, on the current stream
//   } else {
//     std::cerr << graph.failure();   // run the work itself instead
//   }
//
// What the work may do: launch kernels (LibTorch's and ours, on LibTorch's current stream, which the capture
// sets), allocate (the graph keeps its allocations for its replays), read and write memory that outlives the
// graph. What it must not do: synchronise with the host, or let a launch depend on a host value that differs
// between replays: the host code inside it runs once, at the capture, and nothing of it runs on the device
// then. Changing values (a position, the next tokens, random draws) are read from device memory that the
// caller fills before each replay.
//
// A CUDA LibTorch and a CUDA device are needed; anywhere else capture() returns false, saying why, and the
// caller runs the work eagerly. STX_CUDA_GRAPHS=0 in the environment turns capture off (for comparisons).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace stx::models {

class CapturedWork {
 public:
  CapturedWork();
  ~CapturedWork();
  CapturedWork(const CapturedWork&) = delete;
  CapturedWork& operator=(const CapturedWork&) = delete;

  // Waits for the device's work so far, then captures `work` on a side stream of `device`. True when a
  // graph was made (replacing any earlier one); false, with failure() saying why, when not: an exception
  // from the work is caught and reported that way too. Either way none of the captured work has run.
  bool capture(const at::Device& device, const std::function<void()>& work);
  bool captured() const;
  // Launches the captured graph on the current stream of its device. Throws std::logic_error without one.
  void replay();
  // The graph's nodes (its launches, copies and memsets), or -1 when unknown.
  int64_t nodes() const;
  // Why the last capture() returned false ("" after a success).
  const std::string& failure() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stx::models
