// Data-parallel training across processes through LibTorch's c10d: ProcessGroupNCCL for CUDA training where
// LibTorch was built with NCCL, ProcessGroupGloo otherwise. We never build our own communication layer; this
// only wires the standard environment variables to it.
//
//   RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT   (the same variables torchrun sets)
//
// Each process computes gradients on its share of the global batch; average_gradients() all-reduces them,
// so every process takes the same optimiser step.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <ATen/core/Tensor.h>

#include "stx/engine/distributed_settings.h"

namespace stx::engine {

class DataParallel {
 public:
  // Connects to the others (rank 0 hosts the TCP store). Throws Error if they do not arrive in time.
  // `device`: where the model trains; a CUDA device picks NCCL when LibTorch has it.
  DataParallel(const DistributedSettings& settings, const at::Device& device);
  ~DataParallel();
  int rank() const;
  int world_size() const;
  // "NCCL" or "Gloo" (with why, where CUDA training falls back to Gloo).
  const std::string& backend() const;
  // Sums every gradient over the processes and divides by world_size, in one flat all-reduce.
  void average_gradients(const std::vector<at::Tensor>& parameters);
  // Copies rank 0's tensors to everyone (the initial weights).
  void broadcast(std::vector<at::Tensor>& tensors);
  // Sum of `values` over the processes, element by element.
  std::vector<double> sum(const std::vector<double>& values);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace stx::engine
