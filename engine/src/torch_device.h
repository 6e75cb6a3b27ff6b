// The one place a DeviceKind becomes a torch device (device.h has the rules; this header keeps torch out of it).
#pragma once

#include <c10/core/Device.h>

#include "stx/engine/device.h"

namespace stx::engine {

// The CPU, or GPU cuda_device_index(rank, the GPUs present) for kind cuda: data-parallel rank r of a run
// trains on GPU r mod count; sampling passes rank 0.
c10::Device torch_device(DeviceKind kind, int rank = 0);

}  // namespace stx::engine
