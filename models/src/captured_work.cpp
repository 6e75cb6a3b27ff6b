#include "stx/models/captured_work.h"

#include <cstdlib>
#include <exception>
#include <stdexcept>
#include <string>

#include "stx/kernels/attention.h"

#ifdef STX_TORCH_CUDA
#include <ATen/cuda/CUDAGraph.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace stx::models {

struct CapturedWork::Impl {
#ifdef STX_TORCH_CUDA
  std::unique_ptr<at::cuda::CUDAGraph> graph;
#endif
  bool captured = false;
  int64_t nodes = -1;
  std::string failure;
};

CapturedWork::CapturedWork() : impl_(std::make_unique<Impl>()) {}
CapturedWork::~CapturedWork() = default;

bool CapturedWork::captured() const { return impl_->captured; }
int64_t CapturedWork::nodes() const { return impl_->nodes; }
const std::string& CapturedWork::failure() const { return impl_->failure; }

bool CapturedWork::capture(const at::Device& device, const std::function<void()>& work) {
  Impl& s = *impl_;
  s.captured = false;
  s.nodes = -1;
  s.failure.clear();
  const char* switch_value = std::getenv("STX_CUDA_GRAPHS");
  if (switch_value != nullptr && std::string(switch_value) == "0") {
    s.failure = "CUDA graphs are turned off (STX_CUDA_GRAPHS=0)";
    return false;
  }
  if (!device.is_cuda()) {
    s.failure = "a CUDA graph captures work on a CUDA device, not on " + device.str();
    return false;
  }
#ifndef STX_TORCH_CUDA
  (void)work;
  s.failure = "this build's LibTorch has no CUDA, so it cannot capture CUDA graphs";
  return false;
#else
  try {
    const c10::cuda::CUDAGuard device_guard(device);
    // Everything queued so far (the tensors the work reads were filled on the current stream) is done
    // before the side stream records anything: the legacy default stream itself cannot be captured.
    c10::cuda::getCurrentCUDAStream(device.index()).synchronize();
    const c10::cuda::CUDAStream stream = c10::cuda::getStreamFromPool();
    auto graph = std::make_unique<at::cuda::CUDAGraph>();
    {
      const c10::cuda::CUDAStreamGuard stream_guard(stream);
      graph->capture_begin();
      try {
        work();
        s.nodes = kernels::cuda_captured_nodes(stream.stream());
      } catch (...) {
        try {
          graph->capture_end();  // ends the (now invalid) capture so that the stream is usable again
        } catch (...) {
        }
        throw;
      }
      graph->capture_end();
    }
    stream.synchronize();
    s.graph = std::move(graph);
    s.captured = true;
    return true;
  } catch (const std::exception& e) {
    s.nodes = -1;
    s.failure = std::string("the CUDA graph capture failed: ") + e.what();
    return false;
  }
#endif
}

void CapturedWork::replay() {
  if (!impl_->captured) throw std::logic_error("CapturedWork::replay: nothing was captured");
#ifdef STX_TORCH_CUDA
  impl_->graph->replay();
#endif
}

}  // namespace stx::models
