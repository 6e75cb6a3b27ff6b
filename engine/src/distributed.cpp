#include "stx/engine/distributed.h"

#include <ATen/ATen.h>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>

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

struct DataParallel::Impl {
  DistributedSettings settings;
  c10::intrusive_ptr<c10d::ProcessGroupGloo> group;
};

DataParallel::DataParallel(const DistributedSettings& settings) : impl_(std::make_unique<Impl>()) {
  impl_->settings = settings;
  try {
    c10d::TCPStoreOptions store_options;
    store_options.port = static_cast<uint16_t>(settings.master_port);
    store_options.isServer = settings.rank == 0;
    store_options.numWorkers = static_cast<size_t>(settings.world_size);
    store_options.timeout = std::chrono::minutes(5);
    auto store = c10::make_intrusive<c10d::TCPStore>(settings.master_addr, store_options);
    auto options = c10d::ProcessGroupGloo::Options::create(std::chrono::minutes(30));
    options->devices.push_back(c10d::ProcessGroupGloo::createDeviceForHostname(settings.master_addr));
    impl_->group = c10::make_intrusive<c10d::ProcessGroupGloo>(store, settings.rank, settings.world_size, options);
  } catch (const std::exception& e) {
    throw Error("data-parallel start-up failed (rank " + std::to_string(settings.rank) + " of " +
                std::to_string(settings.world_size) + ", " + settings.master_addr + ":" +
                std::to_string(settings.master_port) + "): " + e.what());
  }
}

DataParallel::~DataParallel() = default;

int DataParallel::rank() const { return impl_->settings.rank; }
int DataParallel::world_size() const { return impl_->settings.world_size; }

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
  std::vector<at::Tensor> flat = {at::tensor(values, at::kDouble)};
  impl_->group->allreduce(flat)->wait();
  return std::vector<double>(flat[0].data_ptr<double>(), flat[0].data_ptr<double>() + values.size());
}

}  // namespace stx::engine
