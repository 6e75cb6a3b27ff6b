// Picks the model a tab generates with: the library's models of the tab's kind, plus any folder the user
// opens. Emits modelChosen(path) when the choice changes; the tab then opens it on its engine.
#pragma once

#include <QWidget>

class QComboBox;
class QLabel;
class QPushButton;

namespace stx::studio {

class ModelPicker : public QWidget {
  Q_OBJECT

 public:
  // kind: "image" | "audio" | "text".
  explicit ModelPicker(const QString& kind, QWidget* parent = nullptr);

  QString currentPath() const;
  // Selects `path`, adding it to the list when it is not a library model. Emits modelChosen.
  void choose(const QString& path);
  // Reads the library again (after an import, a rename or a finished training run).
  void refresh();
  // One line about the open model under the picker: "text · fixed l=128 c=32 · 2.1M parameters · 1.85 bpb".
  void showSummary(const QString& line);

  QComboBox* combo() const { return combo_; }

 signals:
  void modelChosen(const QString& path);

 private:
  QString kind_;
  QComboBox* combo_;
  QPushButton* browse_;
  QLabel* summary_;
};

}  // namespace stx::studio
