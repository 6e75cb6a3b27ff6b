#include "patterns/patterns_tab.h"

#include <QComboBox>
#include <QEvent>
#include <QHBoxLayout>
#include <QLabel>
#include <QLocale>
#include <QSignalBlocker>
#include <QSpinBox>
#include <QSplitter>
#include <QToolButton>
#include <QVBoxLayout>
#include <algorithm>
#include <exception>

#include "patterns/color_legend.h"
#include "patterns/connectivity_view.h"
#include "patterns/reach_grid_view.h"

namespace stx::studio {

namespace {

constexpr int kMaxLength = 4096;  // n * n cells: 16M at most, one byte each

QSpinBox* make_spin(const QString& name, int low, int high, int value, const QString& tip) {
  auto* spin = new QSpinBox;
  spin->setObjectName(name);
  spin->setRange(low, high);
  spin->setValue(value);
  spin->setToolTip(tip);
  spin->setAccelerated(true);
  // Wide enough for n = 4096 whatever the range was when the size hint was first taken.
  spin->setMinimumWidth(spin->fontMetrics().horizontalAdvance(QStringLiteral("88888")) + 36);
  return spin;
}

QLabel* make_title(const QString& text) {
  auto* label = new QLabel(text);
  QFont font = label->font();
  font.setBold(true);
  label->setFont(font);
  label->setWordWrap(true);
  return label;
}

}  // namespace

PatternsTab::PatternsTab(StudioContext* context, QWidget* parent) : StudioTab(context, parent) {
  auto* splitter = new QSplitter(Qt::Horizontal);
  splitter->setChildrenCollapsible(false);
  splitter->addWidget(buildMatrixPanel());
  splitter->addWidget(buildGridPanel());
  splitter->setStretchFactor(0, 3);
  splitter->setStretchFactor(1, 2);

  auto* layout = new QVBoxLayout(this);
  layout->addWidget(buildControls());
  layout->addWidget(error_);
  layout->addWidget(splitter, 1);

  updateErrorColors();
  applySpec();
}

QWidget* PatternsTab::buildControls() {
  pattern_ = new QComboBox;
  pattern_->setObjectName(QStringLiteral("pattern"));
  pattern_->addItem(tr("dense"), QStringLiteral("dense"));
  pattern_->addItem(tr("strided"), QStringLiteral("strided"));
  pattern_->addItem(tr("fixed"), QStringLiteral("fixed"));
  pattern_->setItemData(0, tr("Every position attends to every earlier one: the O(n²) baseline"),
                        Qt::ToolTipRole);
  pattern_->setItemData(1, tr("A1: the previous l positions; A2: every l-th position back (images, audio)"),
                        Qt::ToolTipRole);
  pattern_->setItemData(2, tr("A1: the query's own block of l; A2: the last c cells of every block (text)"),
                        Qt::ToolTipRole);
  pattern_->setCurrentIndex(1);

  n_ = make_spin(QStringLiteral("n"), 2, kMaxLength, 128, tr("Sequence length n (2 to %1)").arg(kMaxLength));
  stride_ = make_spin(QStringLiteral("stride"), 1, kMaxLength, 16,
                      tr("Stride l, about √n; also the width of the position grid"));
  summary_ = make_spin(QStringLiteral("summary"), 1, kMaxLength, 4,
                       tr("Summary width c (fixed only): the last c cells of each block, 1 ≤ c ≤ l"));
  query_ = make_spin(QStringLiteral("query"), 0, 127, 100,
                     tr("The query position i; clicking a row of the matrix picks it too"));
  // The pattern rebuilds when a number is entered, not at every digit typed.
  for (QSpinBox* spin : {n_, stride_, summary_}) spin->setKeyboardTracking(false);

  connect(pattern_, &QComboBox::currentIndexChanged, this, [this] { applySpec(); });
  for (QSpinBox* spin : {n_, stride_, summary_})
    connect(spin, &QSpinBox::valueChanged, this, [this] { applySpec(); });
  connect(query_, &QSpinBox::valueChanged, this, [this] { showQuery(); });

  auto* box = new QWidget;
  auto* row = new QHBoxLayout(box);
  row->setContentsMargins(0, 0, 0, 0);
  const auto add = [row](const QString& text, QWidget* field) {
    auto* label = new QLabel(text);
    label->setBuddy(field);
    row->addWidget(label);
    row->addWidget(field);
    row->addSpacing(10);
  };
  add(tr("&Pattern"), pattern_);
  add(tr("&n"), n_);
  add(tr("&l"), stride_);
  add(tr("&c"), summary_);
  add(tr("&Query i"), query_);
  row->addStretch(1);

  error_ = new QLabel;
  error_->setObjectName(QStringLiteral("error"));
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->hide();
  return box;
}

QWidget* PatternsTab::buildMatrixPanel() {
  matrix_ = new ConnectivityView;
  matrix_->setObjectName(QStringLiteral("matrix"));
  matrix_->setToolTip(tr("Click a row to pick the query · drag to pan · wheel or +/− to zoom · 0 fits"));
  connect(matrix_, &ConnectivityView::queryPicked, this, [this](int query) { query_->setValue(query); });
  connect(matrix_, &ConnectivityView::cellHovered, this, &PatternsTab::showHover);
  connect(matrix_, &ConnectivityView::zoomChanged, this, &PatternsTab::showZoom);

  const auto tool = [](const QString& text, const QString& tip) {
    auto* button = new QToolButton;
    button->setText(text);
    button->setToolTip(tip);
    button->setAutoRaise(true);
    return button;
  };
  zoomOut_ = tool(QStringLiteral("−"), tr("Zoom out (−)"));
  zoomIn_ = tool(QStringLiteral("+"), tr("Zoom in (+)"));
  fit_ = tool(tr("Fit"), tr("Fit the whole matrix in the view (0)"));
  connect(zoomOut_, &QToolButton::clicked, matrix_, &ConnectivityView::zoomOut);
  connect(zoomIn_, &QToolButton::clicked, matrix_, &ConnectivityView::zoomIn);
  connect(fit_, &QToolButton::clicked, matrix_, &ConnectivityView::fitToView);
  zoomLabel_ = new QLabel;
  zoomLabel_->setMinimumWidth(fontMetrics().horizontalAdvance(QStringLiteral("6400 % (fit)")));
  zoomLabel_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);

  auto* header = new QHBoxLayout;
  header->addWidget(make_title(tr("Connectivity: row = query i, column = key j (causal, j ≤ i)")), 1);
  header->addWidget(zoomLabel_);
  header->addWidget(zoomOut_);
  header->addWidget(zoomIn_);
  header->addWidget(fit_);

  using Role = PatternColors::Role;
  matrixLegend_ = new ColorLegend(3);
  matrixLegend_->addEntry(Role::a1, tr("A1 only"));
  matrixLegend_->addEntry(Role::a2, tr("A2 only"));
  matrixLegend_->addEntry(Role::both, tr("A1 and A2 (dense: all)"));
  matrixLegend_->addEntry(Role::none, tr("not attended"));
  matrixLegend_->addEntry(Role::later, tr("later key, j > i"));

  hover_ = new QLabel;
  hover_->setObjectName(QStringLiteral("hover"));

  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addLayout(header);
  layout->addWidget(matrix_, 1);
  layout->addWidget(matrixLegend_);
  layout->addWidget(hover_);
  showHover(-1, -1);
  return panel;
}

QWidget* PatternsTab::buildGridPanel() {
  gridTitle_ = make_title(QString());
  auto* gridNote = new QLabel(tr("Position p at row p / l, column p % l, as in the paper's Figure 3"));
  gridNote->setWordWrap(true);
  grid_ = new ReachGridView;
  grid_->setObjectName(QStringLiteral("grid"));

  using Role = PatternColors::Role;
  gridLegend_ = new ColorLegend(2);
  gridLegend_->addEntry(Role::none, tr("the query i (outlined)"), true);
  gridLegend_->addEntry(Role::both, tr("A1 and A2"));
  gridLegend_->addEntry(Role::a1, tr("A1 only"));
  gridLegend_->addEntry(Role::a2, tr("A2 only"));
  gridLegend_->addEntry(Role::reach, tr("two-hop reach only"));
  gridLegend_->addEntry(Role::none, tr("not reached"));
  gridLegend_->addEntry(Role::later, tr("later than the query"));

  counts_ = new QLabel;
  counts_->setObjectName(QStringLiteral("counts"));
  counts_->setWordWrap(true);
  counts_->setTextInteractionFlags(Qt::TextSelectableByMouse);

  auto* panel = new QWidget;
  auto* layout = new QVBoxLayout(panel);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->addWidget(gridTitle_);
  layout->addWidget(gridNote);
  layout->addWidget(grid_, 1);
  layout->addWidget(gridLegend_);
  layout->addWidget(counts_);
  return panel;
}

engine::PatternSpec PatternsTab::specFromControls() const {
  engine::PatternSpec spec;
  spec.pattern = pattern_->currentData().toString().toStdString();
  spec.n = n_->value();
  spec.stride = stride_->value();
  spec.summary = summary_->value();
  return spec;
}

void PatternsTab::applySpec() {
  const bool fixed = pattern_->currentData().toString() == QLatin1String("fixed");
  summary_->setEnabled(fixed);
  {
    // The range change may clamp the query; showQuery below handles it once, with the new pattern.
    const QSignalBlocker blocker(query_);
    query_->setMaximum(n_->value() - 1);
  }
  const engine::PatternSpec spec = specFromControls();
  try {
    spec.validate();
  } catch (const std::exception& e) {
    // Inline, not a banner: it is a value being edited. The views keep the last valid pattern meanwhile.
    error_->setText(tr("Not a valid pattern: %1. The views still show the last valid one.")
                        .arg(QString::fromStdString(e.what())));
    error_->show();
    return;
  }
  error_->clear();
  error_->hide();
  const bool same = hasShown_ && spec.pattern == shown_.pattern && spec.n == shown_.n &&
                    spec.stride == shown_.stride && (!fixed || spec.summary == shown_.summary);
  if (!same) matrix_->setSpec(spec);
  shown_ = spec;
  hasShown_ = true;
  showQuery();
}

void PatternsTab::showQuery() {
  if (!hasShown_) return;
  const int query = std::min(query_->value(), static_cast<int>(shown_.n) - 1);
  matrix_->setQuery(query);
  grid_->setPattern(shown_, query);
  gridTitle_->setText(tr("Query %1 on a grid %2 wide").arg(query).arg(grid_->columns()));

  using engine::PatternPart;
  const QLocale locale;
  const auto a1 = engine::attended_positions(shown_, PatternPart::a1, query);
  const auto a2 = engine::attended_positions(shown_, PatternPart::a2, query);
  const int64_t attended = engine::attended_count(shown_, query);
  const int64_t dense = query + 1;
  const int64_t reach = grid_->reachCount();
  QStringList lines;
  lines << tr("|A1| = %1, |A2| = %2, |A1 ∪ A2| = %3").arg(a1.size()).arg(a2.size()).arg(attended);
  lines << tr("Dense attends query + 1 = %1: ratio %2 / %1 = %3 %")
               .arg(dense)
               .arg(attended)
               .arg(locale.toString(100.0 * static_cast<double>(attended) / static_cast<double>(dense), 'f',
                                    1));
  if (reach == dense) {
    lines
        << tr("Two-hop reach: %1 of query + 1 = %2. Complete: every earlier position can influence query %3 "
              "within two layers.")
               .arg(reach)
               .arg(dense)
               .arg(query);
  } else {
    lines << tr("Two-hop reach: %1 of query + 1 = %2. Incomplete: %3 earlier positions cannot reach query %4 "
                "within two layers.")
                 .arg(reach)
                 .arg(dense)
                 .arg(dense - reach)
                 .arg(query);
  }
  counts_->setText(lines.join(QLatin1Char('\n')));
}

void PatternsTab::showHover(int query, int key) {
  if (query < 0 || key < 0) {
    hover_->setText(tr("Click a row to pick the query · drag to pan · wheel or +/− to zoom"));
    return;
  }
  QString what;
  switch (matrix_->cell(query, key)) {
    case ConnectivityView::Cell::later: what = tr("later key (j > i)"); break;
    case ConnectivityView::Cell::none: what = tr("not attended"); break;
    case ConnectivityView::Cell::a1: what = tr("A1"); break;
    case ConnectivityView::Cell::a2: what = tr("A2"); break;
    case ConnectivityView::Cell::both: what = tr("A1 and A2"); break;
  }
  hover_->setText(tr("query i = %1, key j = %2: %3").arg(query).arg(key).arg(what));
}

void PatternsTab::showZoom(double pixelsPerCell) {
  const QString percent = QLocale().toString(100.0 * pixelsPerCell, 'f', pixelsPerCell < 0.1 ? 1 : 0);
  zoomLabel_->setText(matrix_->fitsView() ? tr("%1 % (fit)").arg(percent) : tr("%1 %").arg(percent));
}

QString PatternsTab::countsText() const { return counts_->text(); }

QString PatternsTab::errorText() const { return error_->isHidden() ? QString() : error_->text(); }

void PatternsTab::updateErrorColors() {
  // A red that reads on the tab's own base, light or dark.
  const bool dark = palette().color(QPalette::Window).lightnessF() < 0.5;
  QPalette palette = error_->palette();
  palette.setColor(QPalette::WindowText, dark ? QColor(0xff, 0x8a, 0x80) : QColor(0xb0, 0x1c, 0x1c));
  error_->setPalette(palette);
}

void PatternsTab::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) updateErrorColors();
  StudioTab::changeEvent(event);
}

void PatternsTab::restoreSettings(QSettings& settings) {
  {
    const QSignalBlocker blockPattern(pattern_), blockN(n_), blockStride(stride_), blockSummary(summary_),
        blockQuery(query_);
    const int index =
        pattern_->findData(settings.value(QStringLiteral("pattern"), QStringLiteral("strided")));
    pattern_->setCurrentIndex(index >= 0 ? index : 1);
    n_->setValue(settings.value(QStringLiteral("n"), 128).toInt());
    stride_->setValue(settings.value(QStringLiteral("l"), 16).toInt());
    summary_->setValue(settings.value(QStringLiteral("c"), 4).toInt());
    query_->setMaximum(n_->value() - 1);
    query_->setValue(settings.value(QStringLiteral("query"), 100).toInt());
  }
  applySpec();
  showQuery();  // applySpec skips it when the restored values are not valid
  matrix_->setZoom(settings.value(QStringLiteral("zoom"), 0.0).toDouble());
}

void PatternsTab::saveSettings(QSettings& settings) const {
  settings.setValue(QStringLiteral("pattern"), pattern_->currentData().toString());
  settings.setValue(QStringLiteral("n"), n_->value());
  settings.setValue(QStringLiteral("l"), stride_->value());
  settings.setValue(QStringLiteral("c"), summary_->value());
  settings.setValue(QStringLiteral("query"), query_->value());
  // 0 stands for "fit", which follows the window's size rather than a number of pixels.
  settings.setValue(QStringLiteral("zoom"), matrix_->fitsView() ? 0.0 : matrix_->zoom());
}

}  // namespace stx::studio
