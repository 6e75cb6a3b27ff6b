#include "core/layer_head_picker.h"

#include <QComboBox>
#include <QSettings>
#include <QSignalBlocker>
#include <algorithm>

namespace stx::studio {

LayerHeadPicker::LayerHeadPicker(int defaultHead, QObject* parent)
    : QObject(parent), layer_(new QComboBox), head_(new QComboBox), wantedHead_(defaultHead) {
  layer_->setToolTip(tr("The layer whose attention is shown"));
  head_->setToolTip(
      tr("The head whose attention is shown; \"All heads\" averages their weights "
         "(while generating, head 1 is shown)"));
  // The boxes go into a tab's layout, which then owns them; this object only drives them.
  auto picked = [this] {
    if (layer_->currentIndex() >= 0) wantedLayer_ = layer_->currentData().toInt();
    if (head_->currentIndex() >= 0) wantedHead_ = head_->currentData().toInt();
    emit changed();
  };
  connect(layer_, &QComboBox::currentIndexChanged, this, picked);
  connect(head_, &QComboBox::currentIndexChanged, this, picked);
  setShape(0, 0);
}

void LayerHeadPicker::setShape(int layers, int heads) {
  {
    const QSignalBlocker blockLayer(layer_), blockHead(head_);
    layer_->clear();
    head_->clear();
    if (layers > 0 && heads > 0) {
      for (int l = 0; l < layers; ++l) layer_->addItem(tr("Layer %1").arg(l + 1), l);
      head_->addItem(tr("All heads (average)"), kAllHeads);
      for (int h = 0; h < heads; ++h) head_->addItem(tr("Head %1").arg(h + 1), h);
      // A choice the new model lacks falls back to the first layer and to the average, for now only: the
      // wanted values stay for the next model that has them.
      layer_->setCurrentIndex(std::max(0, layer_->findData(wantedLayer_)));
      head_->setCurrentIndex(std::max(0, head_->findData(wantedHead_)));
    }
  }
  layer_->setEnabled(layers > 0);
  head_->setEnabled(heads > 0);
}

int LayerHeadPicker::layer() const { return layer_->currentIndex() < 0 ? -1 : layer_->currentData().toInt(); }

int LayerHeadPicker::head() const { return head_->currentIndex() < 0 ? wantedHead_ : head_->currentData().toInt(); }

void LayerHeadPicker::select(int layer, int head) {
  wantedLayer_ = layer;
  wantedHead_ = head;
  {
    // Blocked, so that a choice this model lacks is still wanted for the next one.
    const QSignalBlocker blockLayer(layer_), blockHead(head_);
    if (layer_->count() > 0) layer_->setCurrentIndex(std::max(0, layer_->findData(layer)));
    if (head_->count() > 0) head_->setCurrentIndex(std::max(0, head_->findData(head)));
  }
  emit changed();
}

void LayerHeadPicker::restore(const QSettings& settings, const QString& layerKey, const QString& headKey) {
  select(settings.value(layerKey, wantedLayer_).toInt(), settings.value(headKey, wantedHead_).toInt());
}

void LayerHeadPicker::save(QSettings& settings, const QString& layerKey, const QString& headKey) const {
  settings.setValue(layerKey, wantedLayer_);
  settings.setValue(headKey, wantedHead_);
}

QString LayerHeadPicker::describe(int layer, int head) {
  return head == kAllHeads ? tr("layer %1, all heads (average)").arg(layer + 1)
                           : tr("layer %1, head %2").arg(layer + 1).arg(head + 1);
}

}  // namespace stx::studio
