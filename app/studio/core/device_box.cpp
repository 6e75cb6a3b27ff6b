#include "core/device_box.h"

#include <QStandardItemModel>
#include <algorithm>

#include "core/device_choice.h"

namespace stx::studio {

DeviceBox::DeviceBox(QWidget* parent) : QComboBox(parent) {
  const CudaStatus& cuda = cuda_status();
  addItem(cuda.available ? tr("Automatic (trains on %1, generates on the CPU)").arg(cuda.description)
                         : tr("Automatic (CPU: no CUDA device found)"),
          QStringLiteral("auto"));
  setItemData(
      0,
      tr("Training on the CUDA GPU when there is one. Generating on the CPU, which decodes a few samples "
         "faster than our GPU decoder does"),
      Qt::ToolTipRole);
  addItem(tr("CPU"), QStringLiteral("cpu"));
  addItem(cuda.available ? tr("CUDA GPU") : tr("CUDA GPU (not available)"), QStringLiteral("cuda"));
  if (cuda.available) {
    setItemData(2, cuda.description, Qt::ToolTipRole);
  } else {
    setItemData(2, unavailableNote(), Qt::ToolTipRole);
    // QComboBox's own model is a QStandardItemModel: a disabled item shows greyed out and cannot be picked.
    if (auto* items = qobject_cast<QStandardItemModel*>(model())) items->item(2)->setEnabled(false);
  }
}

QString DeviceBox::device() const { return currentData().toString(); }

void DeviceBox::setDevice(const QString& device) { setCurrentIndex(std::max(0, findData(device))); }

QString DeviceBox::unavailableNote() {
  const CudaStatus& cuda = cuda_status();
  return cuda.available ? QString() : tr("CUDA GPU is off: %1.").arg(cuda.reason);
}

}  // namespace stx::studio
