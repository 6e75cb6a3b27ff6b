// Step 2: where the weights start. Either fine-tune a bundled or user model of the chosen kind (its
// architecture and weights become TrainOptions::init_from) or start from a preset size of that kind.
#pragma once

#include <QWizardPage>

class QButtonGroup;
class QComboBox;
class QLabel;
class QListWidget;
class QPushButton;
class QRadioButton;

namespace stx::studio {

class BaseModelPage : public QWizardPage {
  Q_OBJECT
  Q_PROPERTY(QString baseModel READ baseModel NOTIFY choiceChanged)
  Q_PROPERTY(QString preset READ preset NOTIFY choiceChanged)

 public:
  explicit BaseModelPage(QWidget* parent = nullptr);

  // Lists the library's models and the presets of the Data page's kind, keeping an earlier choice.
  void initializePage() override;
  bool isComplete() const override;

  // The model folder to fine-tune; empty when starting from a preset.
  QString baseModel() const;
  // The preset to start from; empty when fine-tuning.
  QString preset() const;

  // Selects `path` for fine-tuning, adding it to the list when it is not a library model.
  void chooseBaseModel(const QString& path);
  void choosePreset(const QString& name);

  QListWidget* modelList() const { return models_; }
  QComboBox* presetCombo() const { return presets_; }

 signals:
  void choiceChanged();

 private:
  void fillModels();
  // Lists a folder that is not in the library (kept across kind changes); returns its row.
  int addFolder(const QString& path);
  void fillPresets();
  void updateState();

  QString kind_;
  QRadioButton* fineTune_;
  QRadioButton* fromPreset_;
  QListWidget* models_;
  QPushButton* browse_;
  QComboBox* presets_;
  QLabel* details_;
};

}  // namespace stx::studio
