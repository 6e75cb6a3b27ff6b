// The Patterns tab: how the paper's dense, strided and fixed patterns connect positions, computed by the
// engine's pattern_view (no model, no engine thread: every query here is cheap). Left: the connectivity
// matrix (Figure 3, bottom row); right: the picked query's positions on an l-wide grid with its two-hop
// reach (Figure 3, top row) and the counts against dense attention.
#pragma once

#include <QString>

#include "core/studio_tab.h"
#include "stx/engine/pattern_view.h"

class QComboBox;
class QLabel;
class QSpinBox;
class QToolButton;

namespace stx::studio {

class ColorLegend;
class ConnectivityView;
class ReachGridView;

class PatternsTab : public StudioTab {
  Q_OBJECT

 public:
  explicit PatternsTab(StudioContext* context, QWidget* parent = nullptr);

  void restoreSettings(QSettings& settings) override;
  void saveSettings(QSettings& settings) const override;

  // The views and texts as the user sees them (the tests read them).
  const ConnectivityView* connectivityView() const { return matrix_; }
  const ReachGridView* reachGrid() const { return grid_; }
  QString countsText() const;
  // The inline validation message; empty while the controls make a valid pattern.
  QString errorText() const;
  // The pattern the views show: the last valid one.
  const engine::PatternSpec& shownSpec() const { return shown_; }

 protected:
  void changeEvent(QEvent* event) override;

 private:
  QWidget* buildControls();
  QWidget* buildMatrixPanel();
  QWidget* buildGridPanel();
  engine::PatternSpec specFromControls() const;
  // A control of the pattern changed: validate, then rebuild the matrix or show why not.
  void applySpec();
  // The query changed (spin box or a click on the matrix): row highlight, grid and counts.
  void showQuery();
  void showHover(int query, int key);
  void showZoom(double pixelsPerCell);
  void updateErrorColors();

  QComboBox* pattern_;
  QSpinBox* n_;
  QSpinBox* stride_;
  QSpinBox* summary_;
  QSpinBox* query_;
  QLabel* error_;
  ConnectivityView* matrix_;
  QLabel* zoomLabel_;
  QToolButton* zoomOut_;
  QToolButton* zoomIn_;
  QToolButton* fit_;
  QLabel* hover_;
  ColorLegend* matrixLegend_;
  QLabel* gridTitle_;
  ReachGridView* grid_;
  ColorLegend* gridLegend_;
  QLabel* counts_;
  engine::PatternSpec shown_;
  bool hasShown_ = false;
};

}  // namespace stx::studio
