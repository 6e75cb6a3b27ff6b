#include "distributed.h"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <torch/version.h>

#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
// STX_TORCH_NCCL: a CUDA LibTorch built with NCCL (engine/CMakeLists.txt), whose header needs USE_C10D_NCCL.
#ifdef STX_TORCH_NCCL
#include <torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp>
#endif

#include <chrono>
#include <cstdlib>

#include "stx/engine/error.h"

namespace stx::engine {

namespace {

int env_int(const char* name, int fallback, int low, int high) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (*end != '\0' || value < low || value > high) {
    throw Error(std::string("environment variable ") + name + "=" + text + " is not an integer in [" +
                std::to_string(low) + ", " + std::to_string(high) + "]");
  }
  return static_cast<int>(value);
}

}  // namespace

DistributedSettings DistributedSettings::from_environment() {
  DistributedSettings s;
  s.world_size = env_int("WORLD_SIZE", 1, 1, 4096);
  s.rank = env_int("RANK", 0, 0, s.world_size - 1);
  if (const char* addr = std::getenv("MASTER_ADDR"); addr && *addr) s.master_addr = addr;
  s.master_port = env_int("MASTER_PORT", 29500, 1, 65535);
  return s;
}

bool DistributedSettings::started_as_worker() { return std::getenv("RANK") != nullptr; }

void DistributedSettings::to_environment() const {
  setenv("RANK", std::to_string(rank).c_str(), 1);
  setenv("WORLD_SIZE", std::to_string(world_size).c_str(), 1);
  setenv("MASTER_ADDR", master_addr.c_str(), 1);
  setenv("MASTER_PORT", std::to_string(master_port).c_str(), 1);
}

// What the Gloo and NCCL groups share. LibTorch 2.x split ProcessGroup into a front and per-device
// Backends, and ProcessGroupGloo / ProcessGroupNCCL became Backends; in 1.13 they are ProcessGroups.
#if TORCH_VERSION_MAJOR >= 2
using Group = c10d::Backend;
#else
using Group = c10d::ProcessGroup;
#endif

bool nccl_built() {
#ifdef STX_TORCH_NCCL
  return true;
#else
  return false;
#endif
}

struct DataParallel::Impl {
  DistributedSettings settings;
  c10::intrusive_ptr<Group> group;
  at::Device device{at::kCPU};  // where the tensors that travel live: NCCL takes CUDA tensors only
  std::string backend;
};

DataParallel::DataParallel(const DistributedSettings& settings, const at::Device& device)
    : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  impl_->device = device;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(settings.master_port);
    store_options.isServer = settings.rank == 0;
    store_options.numWorkers = static_cast<size_t>(settings.world_size);
    store_options.timeout = std::chrono::minutes(5);
    auto store = c10::make_intrusive<c10d::TCPStore>(settings.master_addr, store_options);
    // NCCL wants a GPU of its own for each process; processes of one machine that share a GPU use Gloo.
    const bool gpu_each = static_cast<int64_t>(torch::cuda::device_count()) >= settings.world_size;
#ifdef STX_TORCH_NCCL
    if (device.is_cuda() && gpu_each) {
      auto options = c10d::ProcessGroupNCCL::Options::create();
      options->timeout = std::chrono::minutes(30);
      impl_->group =
          c10::make_intrusive<c10d::ProcessGroupNCCL>(store, settings.rank, settings.world_size, options);
      impl_->backend = "NCCL";
    }
#endif
    if (!impl_->group) {
      auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(30));
      options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(settings.master_addr));
      impl_->group =
          c10::make_intrusive<c10d::ProcessGroupGloo>(store, settings.rank, settings.world_size, options);
      impl_->backend = "Gloo";
      // Gloo reduces CUDA tensors too, through host copies: slower than NCCL, but it works.
      if (device.is_cuda()) {
        impl_->backend += !nccl_built() ? " (this LibTorch has no NCCL)"
                          : !gpu_each   ? " (NCCL needs a GPU for each process; " +
                                            std::to_string(torch::cuda::device_count()) + " for " +
                                            std::to_string(settings.world_size) + " processes)"
                                      : "";
      }
    }
  } catch (const std::exception& e) {
    throw Error("data-parallel start-up failed (rank " + std::to_string(settings.rank) + " of " +
                std::to_string(settings.world_size) + ", " + settings.master_addr + ":" +
                std::to_string(settings.master_port) + "): " + e.what());
  }
}

DataParallel::~DataParallel() = default;

int DataParallel::rank() const { return impl_->settings.rank; }
int DataParallel::world_size() const { return impl_->settings.world_size; }
const std::string& DataParallel::backend() const { return impl_->backend; }

void DataParallel::average_gradients(const std::vector<at::Tensor>& parameters) {
  std::vector<at::Tensor> grads;
  for (const at::Tensor& p : parameters) {
    grads.push_back(p.grad().defined() ? p.grad().reshape({-1}) : at::zeros({p.numel()}, p.options()));
  }
  std::vector<at::Tensor> flat = {at::cat(grads)};
  impl_->group->allreduce(flat)->wait();
  flat[0].div_(world_size());
  int64_t offset = 0;
  for (const at::Tensor& p : parameters) {
    const int64_t n = p.numel();
    if (p.grad().defined()) p.mutable_grad().copy_(flat[0].narrow(0, offset, n).view_as(p));
    offset += n;
  }
}

void DataParallel::broadcast(std::vector<at::Tensor>& tensors) {
  for (at::Tensor& t : tensors) {
    std::vector<at::Tensor> one = {t};
    impl_->group->broadcast(one)->wait();
  }
}

std::vector<double> DataParallel::sum(const std::vector<double>& values) {
  std::vector<at::Tensor> flat = {at::tensor(values, at::kDouble).to(impl_->device)};
  impl_->group->allreduce(flat)->wait();
  const at::Tensor host = flat[0].to(at::kCPU);
  return std::vector<double>(host.data_ptr<double>(), host.data_ptr<double>() + values.size());
}

}  // namespace stx::engine
