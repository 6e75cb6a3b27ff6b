// Where the studio runs models: "auto" (training on the GPU when there is one, generating on the CPU), "cpu"
// or "cuda", the words the preference and DeviceBox keep, turned into the engine's DeviceChoice by
// device_choice() when a request is made. Tabs and the status bar describe a choice with describe_device();
// Edit > Preferences and the training wizard offer the choices through DeviceBox (device_box.h). No widgets
// here: the engine worker checks requests with device_problem().
#pragma once

#include <QString>

#include "stx/engine/device.h"

namespace stx::studio {

// Whether this machine runs models on a CUDA GPU. Asked of the engine once: devices do not come and go while
// the studio runs, and asking CUDA again on every status update would cost a driver call each time.
struct CudaStatus {
  bool available = false;
  QString description;  // "CUDA: NVIDIA H100 80GB HBM3" when available
  QString reason;       // when not: why, in the engine's words (engine::cuda_unavailable_reason)
};
const CudaStatus& cuda_status();

// Where `device` runs a job here, as the status bar says it: "CPU", "CUDA: <name>", or for "cuda" with no
// GPU, "CUDA GPU (none found)". "auto" trains on the GPU when there is one but generates on the CPU.
enum class Job { generation, training };
QString describe_device(const QString& device, Job job = Job::generation);

// The preference's word as the engine's choice; a word this studio does not know (a hand-edited setting)
// is Automatic.
stx::engine::DeviceChoice device_choice(const QString& device);

// Why a job cannot run on `device` here, in plain words naming the preference: only cuda on a machine
// without a CUDA device. Empty when it can run.
QString device_problem(stx::engine::DeviceChoice device);

}  // namespace stx::studio
