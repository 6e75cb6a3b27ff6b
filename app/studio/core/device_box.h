// The device choice of Edit > Preferences and of the training wizard: Automatic, CPU, CUDA GPU, each item's
// data the name SampleRequest::device and TrainOptions::device take ("auto", "cpu", "cuda").
#pragma once

#include <QComboBox>
#include <QString>

namespace stx::studio {

// "Automatic" says what it picks on this machine; "CUDA GPU" is disabled, with a tooltip saying why, when
// there is no CUDA device.
class DeviceBox : public QComboBox {
  Q_OBJECT

 public:
  explicit DeviceBox(QWidget* parent = nullptr);

  QString device() const;
  // Selects `device` as it is, even a disabled "cuda", so a saved choice this machine cannot run shows as
  // what it is; an unknown name selects Automatic.
  void setDevice(const QString& device);

  // A line to show beside the box on a machine without CUDA ("CUDA GPU is off: ..."); empty with a GPU.
  static QString unavailableNote();
};

}  // namespace stx::studio
