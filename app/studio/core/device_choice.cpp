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
  const CudaStatus& cuda = cuda_status();
  const DeviceChoice choice = device_choice(device);
  if (choice == DeviceChoice::cpu) return QStringLiteral("CPU");
  // Automatic generates on the CPU, faster than our GPU decoder (engine/device.h: resolve_generation_device).
  if (choice == DeviceChoice::automatic && job == Job::generation) return QStringLiteral("CPU");
  if (cuda.available) return cuda.description;
  return choice == DeviceChoice::cuda ? QObject::tr("CUDA GPU (none found)") : QStringLiteral("CPU");
}

QString device_problem(DeviceChoice device) {
  if (device != DeviceChoice::cuda || cuda_status().available) return {};
  return QObject::tr("Edit > Preferences > Device asks for the CUDA GPU, but %1: choose Automatic or CPU")
      .arg(cuda_status().reason);
}

}  // namespace stx::studio
