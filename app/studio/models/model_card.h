// The card of the model selected in the Models tab: what it is (kind, size, attention pattern, shape), how
// far it was trained and how well, where it lives, and its MODEL_CARD.md rendered as Markdown. A model that
// cannot be read shows why, in red, instead of its facts. Display only: the tab owns the actions.
#pragma once

#include <QWidget>

#include "core/model_library.h"

class QFormLayout;
class QLabel;
class QLineEdit;
class QStackedLayout;
class QTextBrowser;
class QVBoxLayout;

namespace stx::studio {

class ModelCard : public QWidget {
  Q_OBJECT

 public:
  explicit ModelCard(QWidget* parent = nullptr);

  void showEntry(const LibraryEntry& entry);
  // No model selected: `message` says what to do ("Select a model", "No models yet: import one").
  void showMessage(const QString& message);

  // The folder the card shows; empty when showMessage() was called last.
  QString path() const { return path_; }

 private:
  QLabel* addFact(const QString& label, const QString& objectName);
  void setFactVisible(QLabel* value, bool visible);

  QString path_;
  QStackedLayout* pages_;
  QVBoxLayout* column_;
  QLabel* message_;
  QLabel* title_;
  QLabel* subtitle_;
  QLabel* error_;
  QFormLayout* facts_;
  QLabel* name_;
  QLabel* kind_;
  QLabel* parameters_;
  QLabel* pattern_;
  QLabel* mode_;
  QLabel* context_;
  QLabel* shape_;
  QLabel* steps_;
  QLabel* bitsPerByte_;
  QLineEdit* folder_;
  QLineEdit* checkpoint_;
  QLabel* cardHeading_;
  QTextBrowser* cardText_;
};

}  // namespace stx::studio
