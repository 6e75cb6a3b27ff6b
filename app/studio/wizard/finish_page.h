// Step 5: where the new model is and how good it got. Finish hands it to the window (TrainWizard emits
// modelReady), which adds it to the library and opens it in the tab of its kind.
#pragma once

#include <QWizardPage>

class QLabel;

namespace stx::studio {

class FinishPage : public QWizardPage {
  Q_OBJECT

 public:
  explicit FinishPage(QWidget* parent = nullptr);

  // Reads the run folder's model card (no weights) and says what it holds.
  void initializePage() override;

  QLabel* textLabel() const { return text_; }
  // The bits/byte shown: the run's last validation, else the best on record; negative when unknown.
  double finalBitsPerByte() const { return bitsPerByte_; }

 private:
  QLabel* text_;
  double bitsPerByte_ = -1;
};

}  // namespace stx::studio
