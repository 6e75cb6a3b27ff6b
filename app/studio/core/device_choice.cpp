#include "core/device_choice.h"

#include <QObject>
#include <exception>

#include "stx/engine/device.h"

namespace stx::studio {

namespace {

const QString kCpu = QStringLiteral("cpu");
const QString kCuda = QStringLiteral("cuda");

// The engine says why "cuda" cannot run only in the error it throws for it:
// "<option> cuda: <why>; use <option> cpu". The reason alone reads better in a tooltip; a message of another
// form is kept whole.
QString reason_cuda_is_unavailable() {
  const std::string option = "device";
  try {
    stx::engine::resolve_device_name("cuda", option);
  } catch (const std::exception& e) {
    QString reason = QString::fromStdString(e.what());
    const QString prefix = QString::fromStdString(option + " cuda: ");
    const QString suffix = QString::fromStdString("; use " + option + " cpu");
    if (reason.startsWith(prefix) && reason.endsWith(suffix)) {
      reason = reason.mid(prefix.size(), reason.size() - prefix.size() - suffix.size());
    }
    return reason;
  }
  return QObject::tr("no CUDA device was found");
}

}  // namespace

const CudaStatus& cuda_status() {
  static const CudaStatus status = [] {
    CudaStatus s;
    s.available = stx::engine::cuda_available();
    if (s.available) {
      s.description = QString::fromStdString(stx::engine::device_description("cuda"));
    } else {
      s.reason = reason_cuda_is_unavailable();
    }
    return s;
  }();
  return status;
}

QString describe_device(const QString& device) {
  const CudaStatus& cuda = cuda_status();
  if (device == kCpu) return QStringLiteral("CPU");
  if (cuda.available) return cuda.description;
  return device == kCuda ? QObject::tr("CUDA GPU (none found)") : QStringLiteral("CPU");
}

QString device_problem(const QString& device) {
  if (device != kCuda || cuda_status().available) return {};
  return QObject::tr("Edit > Preferences > Device asks for the CUDA GPU, but %1: choose Automatic or CPU")
      .arg(cuda_status().reason);
}

}  // namespace stx::studio
