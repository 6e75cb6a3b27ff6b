#include "core/device_choice.h"

#include <QObject>
#include <exception>

#include "stx/engine/error.h"

namespace stx::studio {

using stx::engine::DeviceChoice;

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
    CudaStatus s;
    s.available = stx::engine::cuda_available();
    if (s.available) {
      s.description = QString::fromStdString(stx::engine::device_description(stx::engine::DeviceKind::cuda));
    } else {
      s.reason = QString::fromStdString(stx::engine::cuda_unavailable_reason());
    }
    return s;
  }();
  return status;
}

DeviceChoice device_choice(const QString& device) {
  try {
    return stx::engine::parse_device_choice(device.toStdString());
  } catch (const stx::engine::Error&) {
    return DeviceChoice::automatic;
  }
}

QString describe_device(const QString& device, Job job) {
  const DeviceChoice choice = device_choice(device);
  // Automatic generation with a GPU present is measured by the first run (engine/generation_device.h), whose
  // SampleStarted then names the device and the rates.
  if (job == Job::generation && choice == DeviceChoice::automatic && cuda_status().available) {
    return QObject::tr("CPU or %1, the faster (measured when generating)").arg(cuda_status().description);
  }
  try {  // the engine's rule for each job (engine/device.h), so that what is shown is where it runs
    const stx::engine::DeviceKind kind = job == Job::generation ? stx::engine::resolve_generation_device(choice)
                                                                : stx::engine::resolve_training_device(choice);
    return kind == stx::engine::DeviceKind::cuda ? cuda_status().description : QStringLiteral("CPU");
  } catch (const stx::engine::Error&) {  // cuda asked for where there is none
    return QObject::tr("CUDA GPU (none found)");
  }
}

QString device_problem(DeviceChoice device) {
  if (device != DeviceChoice::cuda || cuda_status().available) return {};
  return QObject::tr("Edit > Preferences > Device asks for the CUDA GPU, but %1: choose Automatic or CPU")
      .arg(cuda_status().reason);
}

}  // namespace stx::studio
