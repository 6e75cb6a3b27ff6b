#include "core/device_choice.h"

#include <QObject>
#include <exception>

#include "stx/engine/device.h"

namespace stx::studio {

namespace {

const QString kCpu = QStringLiteral("cpu");
const QString kCuda = QStringLiteral("cuda");

}  // namespace

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
    CudaStatus s;
    s.available = stx::engine::cuda_available();
    if (s.available) {
      s.description = QString::fromStdString(stx::engine::device_description("cuda"));
    } else {
      s.reason = QString::fromStdString(stx::engine::cuda_unavailable_reason());
    }
    return s;
  }();
  return status;
}

QString describe_device(const QString& device, Job job) {
  const CudaStatus& cuda = cuda_status();
  if (device == kCpu) return QStringLiteral("CPU");
  // Automatic generates on the CPU, faster than our GPU decoder (engine/device.h: resolve_generation_device).
  if (device != kCuda && job == Job::generation) return QStringLiteral("CPU");
  if (cuda.available) return cuda.description;
  return device == kCuda ? QObject::tr("CUDA GPU (none found)") : QStringLiteral("CPU");
}

QString device_problem(const QString& device) {
  if (device != kCuda || cuda_status().available) return {};
  return QObject::tr("Edit > Preferences > Device asks for the CUDA GPU, but %1: choose Automatic or CPU")
      .arg(cuda_status().reason);
}

}  // namespace stx::studio
