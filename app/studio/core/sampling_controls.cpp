#include "core/sampling_controls.h"

#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpressionValidator>
#include <QSettings>
#include <QSpinBox>

namespace stx::studio {
namespace {

QDoubleSpinBox* setting_box(double lowest, double highest, double step, double value, const QString& tip) {
  auto* box = new QDoubleSpinBox;
  box->setRange(lowest, highest);
  box->setSingleStep(step);
  box->setValue(value);
  box->setToolTip(tip);
  return box;
}

}  // namespace

SamplingControls::SamplingControls(int maxSamples, QWidget* parent) : QWidget(parent) {
  temperature_ = setting_box(0.0, 2.0, 0.05, 1.0, tr("0 always picks the most likely byte; higher is more varied"));
  topK_ = new QSpinBox;
  topK_->setRange(0, 256);
  topK_->setSpecialValueText(tr("off"));
  topK_->setToolTip(tr("keep only the k most likely bytes (off: all 256)"));
  topP_ = setting_box(0.01, 1.0, 0.05, 1.0, tr("keep the smallest set of bytes whose probability reaches p (1: all)"));
  minP_ = setting_box(0.0, 0.99, 0.005, 0.0,
                      tr("leave out bytes less likely than this times the most likely one (off: none); for audio, "
                         "a floor under the hiss a 256-way distribution spreads over every level"));
  minP_->setDecimals(3);
  minP_->setSpecialValueText(tr("off"));
  modelDefaults_ = new QPushButton(tr("Model defaults"));
  modelDefaults_->setToolTip(tr("temperature, top-k, top-p and min-p as the open model's config.json sets them "
                                "(the plain defaults where it sets none)"));
  connect(modelDefaults_, &QPushButton::clicked, this, [this] { apply(modelDefaultSettings_); });
  seed_ = new QLineEdit(QStringLiteral("1"));
  seed_->setValidator(new QRegularExpressionValidator(QRegularExpression(QStringLiteral("[0-9]{1,20}")), seed_));
  randomSeed_ = new QCheckBox(tr("random"));
  randomSeed_->setChecked(true);
  randomSeed_->setToolTip(tr("a fresh seed every run; the field then shows the seed used"));
  connect(randomSeed_, &QCheckBox::toggled, seed_, [this](bool random) { seed_->setReadOnly(random); });
  seed_->setReadOnly(true);
  count_ = new QSpinBox;
  count_->setRange(1, maxSamples);
  count_->setValue(1);

  auto* seedRow = new QHBoxLayout;
  seedRow->setContentsMargins(0, 0, 0, 0);
  seedRow->addWidget(seed_, 1);
  seedRow->addWidget(randomSeed_);
  auto* form = new QFormLayout(this);
  form->setContentsMargins(0, 0, 0, 0);
  form->addRow(tr("Temperature"), temperature_);
  form->addRow(tr("Top-k"), topK_);
  form->addRow(tr("Top-p"), topP_);
  form->addRow(tr("Min-p"), minP_);
  form->addRow(QString(), modelDefaults_);
  form->addRow(tr("Seed"), seedRow);
  form->addRow(tr("Samples"), count_);
}

stx::engine::SamplingSettings SamplingControls::settings() const {
  stx::engine::SamplingSettings s;
  s.temperature = temperature_->value();
  s.top_k = topK_->value();
  s.top_p = topP_->value();
  s.min_p = minP_->value();
  return s;
}

std::optional<uint64_t> SamplingControls::seed() const {
  if (randomSeed_->isChecked()) return std::nullopt;
  bool ok = false;
  const qulonglong value = seed_->text().toULongLong(&ok);
  return ok ? std::optional<uint64_t>(value) : std::optional<uint64_t>(0);
}

int SamplingControls::sampleCount() const { return count_->value(); }
void SamplingControls::setSampleCount(int count) { count_->setValue(count); }

void SamplingControls::apply(const stx::engine::SamplingSettings& settings) {
  temperature_->setValue(settings.temperature);
  topK_->setValue(settings.top_k);
  topP_->setValue(settings.top_p);
  minP_->setValue(settings.min_p);
}

void SamplingControls::modelOpened(const QString& folder, const stx::engine::SamplingSettings& defaults) {
  modelDefaultSettings_ = defaults;
  if (folder == defaultsFrom_) return;
  defaultsFrom_ = folder;
  apply(defaults);
}

void SamplingControls::showSeedUsed(uint64_t seed) { seed_->setText(QString::number(static_cast<qulonglong>(seed))); }

void SamplingControls::restore(QSettings& settings) {
  temperature_->setValue(settings.value(QStringLiteral("temperature"), temperature_->value()).toDouble());
  topK_->setValue(settings.value(QStringLiteral("topK"), topK_->value()).toInt());
  topP_->setValue(settings.value(QStringLiteral("topP"), topP_->value()).toDouble());
  minP_->setValue(settings.value(QStringLiteral("minP"), minP_->value()).toDouble());
  defaultsFrom_ = settings.value(QStringLiteral("defaultsFrom"), defaultsFrom_).toString();
  seed_->setText(settings.value(QStringLiteral("seed"), seed_->text()).toString());
  randomSeed_->setChecked(settings.value(QStringLiteral("randomSeed"), randomSeed_->isChecked()).toBool());
  count_->setValue(settings.value(QStringLiteral("samples"), count_->value()).toInt());
}

void SamplingControls::save(QSettings& settings) const {
  settings.setValue(QStringLiteral("temperature"), temperature_->value());
  settings.setValue(QStringLiteral("topK"), topK_->value());
  settings.setValue(QStringLiteral("topP"), topP_->value());
  settings.setValue(QStringLiteral("minP"), minP_->value());
  settings.setValue(QStringLiteral("defaultsFrom"), defaultsFrom_);
  settings.setValue(QStringLiteral("seed"), seed_->text());
  settings.setValue(QStringLiteral("randomSeed"), randomSeed_->isChecked());
  settings.setValue(QStringLiteral("samples"), count_->value());
}

}  // namespace stx::studio
