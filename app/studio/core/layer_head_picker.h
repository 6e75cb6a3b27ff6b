// The attention layer and head pickers that the Image, Audio and Text tabs share, so that all three name
// them alike: "Layer 1".."Layer N", then "All heads (average)" and "Head 1".."Head H", counted from 1 as a
// user counts. The values are the engine's (0-based; kAllHeads for the average). The choice is kept across
// models that have it, and remembered in the tab's settings.
#pragma once

#include <QObject>
#include <QString>

class QComboBox;
class QSettings;

namespace stx::studio {

class LayerHeadPicker : public QObject {
  Q_OBJECT

 public:
  static constexpr int kAllHeads = -1;

  // defaultHead: the head chosen until the user or the settings pick one (kAllHeads or 0).
  explicit LayerHeadPicker(int defaultHead, QObject* parent = nullptr);

  // The open model's layers and heads; 0 and 0 when none is open: the lists empty and are disabled.
  void setShape(int layers, int heads);
  int layer() const;  // -1 before a model is open
  int head() const;   // kAllHeads, or a head of the open model (the wanted one before a model is open)

  // The choice under the keys each tab has always used, so that a user's saved choice carries over.
  void restore(const QSettings& settings, const QString& layerKey, const QString& headKey);
  void save(QSettings& settings, const QString& layerKey, const QString& headKey) const;

  QComboBox* layerBox() const { return layer_; }
  QComboBox* headBox() const { return head_; }

  // "layer 2, head 1" or "layer 2, all heads (average)", for notes about a probe (0-based values in).
  static QString describe(int layer, int head);

 signals:
  // Another layer or head was picked, by the user or the settings; not when a model refills the lists.
  void changed();

 private:
  void select(int layer, int head);

  QComboBox* layer_;
  QComboBox* head_;
  // Applied whenever a model says which layers and heads exist.
  int wantedLayer_ = 0, wantedHead_ = 0;
};

}  // namespace stx::studio
