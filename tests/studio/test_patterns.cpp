// The Patterns tab shows the engine's pattern sets exactly: every matrix cell and every grid mark is checked
// against pattern_view, and the user's ways in (controls, clicks, settings) are driven like a user would.
#include <QApplication>
#include <QComboBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QMouseEvent>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTest>
#include <limits>
#include <set>

#include "core/studio_context.h"
#include "patterns/connectivity_view.h"
#include "patterns/patterns_tab.h"
#include "patterns/reach_grid_view.h"
#include "stx/engine/pattern_view.h"

using stx::engine::PatternPart;
using stx::engine::PatternSpec;
using stx::studio::ConnectivityView;
using stx::studio::PatternsTab;
using stx::studio::ReachGridView;

namespace {

PatternSpec make_spec(const std::string& pattern, int n, int l = 8, int c = 1) {
  PatternSpec spec;
  spec.pattern = pattern;
  spec.n = n;
  spec.stride = l;
  spec.summary = c;
  return spec;
}

// The pattern of the running data-driven test's row (columns pattern, n, l and c).
PatternSpec fetched_spec() {
  QFETCH(QString, pattern);
  QFETCH(int, n);
  QFETCH(int, l);
  QFETCH(int, c);
  return make_spec(pattern.toStdString(), n, l, c);
}

// Sets the controls one by one, as a user would; c goes to 1 first so no step in between is invalid.
void show_pattern(PatternsTab& tab, const PatternSpec& spec, int query) {
  auto* pattern = tab.findChild<QComboBox*>(QStringLiteral("pattern"));
  pattern->setCurrentIndex(pattern->findData(QString::fromStdString(spec.pattern)));
  tab.findChild<QSpinBox*>(QStringLiteral("summary"))->setValue(1);
  tab.findChild<QSpinBox*>(QStringLiteral("n"))->setValue(static_cast<int>(spec.n));
  tab.findChild<QSpinBox*>(QStringLiteral("stride"))->setValue(static_cast<int>(spec.stride));
  tab.findChild<QSpinBox*>(QStringLiteral("summary"))->setValue(static_cast<int>(spec.summary));
  tab.findChild<QSpinBox*>(QStringLiteral("query"))->setValue(query);
}

std::set<int64_t> as_set(const std::vector<int64_t>& positions) {
  return {positions.begin(), positions.end()};
}

ConnectivityView::Cell expected_cell(const std::set<int64_t>& a1, const std::set<int64_t>& a2, int key) {
  const bool in1 = a1.count(key) > 0, in2 = a2.count(key) > 0;
  if (in1 && in2) return ConnectivityView::Cell::both;
  if (in1) return ConnectivityView::Cell::a1;
  if (in2) return ConnectivityView::Cell::a2;
  return ConnectivityView::Cell::none;
}

// Checks every cell of row `query` against the engine's A1 and A2; returns the first mismatch.
QString compare_row(const ConnectivityView& view, const PatternSpec& spec, int query) {
  const auto a1 = as_set(stx::engine::attended_positions(spec, PatternPart::a1, query));
  const auto a2 = as_set(stx::engine::attended_positions(spec, PatternPart::a2, query));
  for (int key = 0; key < spec.n; ++key) {
    const auto want = key > query ? ConnectivityView::Cell::later : expected_cell(a1, a2, key);
    if (view.cell(query, key) != want || view.cellImage().pixelIndex(key, query) != static_cast<int>(want)) {
      return QStringLiteral("query %1 key %2: drew %3, engine says %4")
          .arg(query)
          .arg(key)
          .arg(static_cast<int>(view.cell(query, key)))
          .arg(static_cast<int>(want));
    }
  }
  return {};
}

void click(QWidget* widget, const QPoint& at) {
  QTest::mouseClick(widget, Qt::LeftButton, Qt::NoModifier, at);
}

QPalette dark_palette() {
  QPalette p;
  p.setColor(QPalette::Window, QColor(0x2b, 0x2b, 0x2b));
  p.setColor(QPalette::WindowText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Base, QColor(0x1c, 0x1c, 0x1c));
  p.setColor(QPalette::AlternateBase, QColor(0x33, 0x33, 0x33));
  p.setColor(QPalette::Text, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Button, QColor(0x3a, 0x3a, 0x3a));
  p.setColor(QPalette::ButtonText, QColor(0xe6, 0xe6, 0xe6));
  p.setColor(QPalette::Highlight, QColor(0x3d, 0x8e, 0xe6));
  p.setColor(QPalette::HighlightedText, Qt::white);
  return p;
}

}  // namespace

class PatternsTabTest : public QObject {
  Q_OBJECT

 private slots:
  void matrixEqualsAttendedPositions_data();
  void matrixEqualsAttendedPositions();
  void countsMatchEngine_data();
  void countsMatchEngine();
  void clickingRowPicksQuery();
  void draggingPansWithoutPicking();
  void reachGridMarksTwoHopReach_data();
  void reachGridMarksTwoHopReach();
  void invalidSummaryKeepsPreviousMatrix();
  void settingsRoundTrip();
  void largeMatricesBuildQuickly();
  void followsPaletteChange();
};

void PatternsTabTest::matrixEqualsAttendedPositions_data() {
  QTest::addColumn<QString>("pattern");
  QTest::addColumn<int>("n");
  QTest::addColumn<int>("l");
  QTest::addColumn<int>("c");
  QTest::newRow("strided n=64 l=8") << "strided" << 64 << 8 << 1;
  QTest::newRow("fixed n=64 l=8 c=2") << "fixed" << 64 << 8 << 2;
  QTest::newRow("dense n=16") << "dense" << 16 << 8 << 1;
}

void PatternsTabTest::matrixEqualsAttendedPositions() {
  // given the tab set to the pattern through its controls
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  const PatternSpec spec = fetched_spec();
  const int n = static_cast<int>(spec.n);
  show_pattern(tab, spec, n / 2);
  // then every drawn cell, of every query, is the engine's class
  const ConnectivityView& view = *tab.connectivityView();
  QCOMPARE(view.size(), n);
  QCOMPARE(view.cellImage().size(), QSize(n, n));
  QVERIFY(tab.errorText().isEmpty());
  for (int query = 0; query < n; ++query) {
    const QString mismatch = compare_row(view, spec, query);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
  }
}

void PatternsTabTest::countsMatchEngine_data() { matrixEqualsAttendedPositions_data(); }

void PatternsTabTest::countsMatchEngine() {
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  const PatternSpec spec = fetched_spec();
  const int n = static_cast<int>(spec.n);
  for (const int query : {0, 1, n / 2 - 1, n / 2 + 3, n - 1}) {
    show_pattern(tab, spec, query);
    const QString text = tab.countsText();
    const auto a1 = stx::engine::attended_positions(spec, PatternPart::a1, query).size();
    const auto a2 = stx::engine::attended_positions(spec, PatternPart::a2, query).size();
    const auto both = stx::engine::attended_count(spec, query);
    const auto reach = stx::engine::two_hop_reach(spec, query).size();
    QVERIFY2(text.contains(QStringLiteral("|A1| = %1, |A2| = %2, |A1 ∪ A2| = %3").arg(a1).arg(a2).arg(both)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("query + 1 = %1: ratio %2 / %1").arg(query + 1).arg(both)),
             qPrintable(text));
    QVERIFY2(text.contains(QStringLiteral("Two-hop reach: %1 of query + 1 = %2").arg(reach).arg(query + 1)),
             qPrintable(text));
    // strided, fixed and dense all reach every earlier position in two layers
    QCOMPARE(static_cast<int>(reach), query + 1);
    QVERIFY2(text.contains(QStringLiteral("Complete")), qPrintable(text));
  }
}

void PatternsTabTest::clickingRowPicksQuery() {
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  tab.resize(1100, 700);
  tab.show();
  QVERIFY(QTest::qWaitForWindowExposed(&tab));
  show_pattern(tab, make_spec("strided", 64, 8), 5);
  auto* view = tab.findChild<ConnectivityView*>(QStringLiteral("matrix"));
  QVERIFY(view->fitsView());
  QVERIFY2(view->zoom() >= 1, "64 cells fit at one pixel or more");
  auto* query = tab.findChild<QSpinBox*>(QStringLiteral("query"));
  // when the user clicks anywhere on row r (left of, on or right of the diagonal), then query r is picked
  for (const int row : {0, 17, 40, 63}) {
    for (const int key : {0, row, 63}) {
      click(view->viewport(), view->cellRect(row, key).center());
      QCOMPARE(query->value(), row);
      QCOMPARE(view->query(), row);
      QCOMPARE(tab.reachGrid()->query(), row);
      QVERIFY(tab.countsText().contains(QStringLiteral("query + 1 = %1").arg(row + 1)));
    }
  }
  // zoomed in and scrolled: the row under the pointer is still the one picked
  view->setZoom(24);
  QVERIFY(!view->fitsView());
  query->setValue(50);  // scrolls row 50 into view
  const QRect row51 = view->cellRect(51, 45);
  QVERIFY(view->viewport()->rect().contains(row51.center()));
  QVERIFY(view->verticalScrollBar()->value() > 0);
  click(view->viewport(), row51.center());
  QCOMPARE(query->value(), 51);
}

void PatternsTabTest::draggingPansWithoutPicking() {
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  tab.resize(1100, 700);
  tab.show();
  QVERIFY(QTest::qWaitForWindowExposed(&tab));
  show_pattern(tab, make_spec("strided", 256, 16), 7);
  auto* view = tab.findChild<ConnectivityView*>(QStringLiteral("matrix"));
  view->setZoom(8);
  const int before = view->horizontalScrollBar()->value();
  QWidget* viewport = view->viewport();
  const QPointF from(200, 200), to(120, 200);
  QMouseEvent press(QEvent::MouseButtonPress, from, viewport->mapToGlobal(from), Qt::LeftButton,
                    Qt::LeftButton, {});
  QMouseEvent move(QEvent::MouseMove, to, viewport->mapToGlobal(to), Qt::NoButton, Qt::LeftButton, {});
  QMouseEvent release(QEvent::MouseButtonRelease, to, viewport->mapToGlobal(to), Qt::LeftButton, Qt::NoButton,
                      {});
  QApplication::sendEvent(viewport, &press);
  QApplication::sendEvent(viewport, &move);
  QApplication::sendEvent(viewport, &release);
  QCOMPARE(view->horizontalScrollBar()->value(), before + 80);
  QCOMPARE(tab.findChild<QSpinBox*>(QStringLiteral("query"))->value(), 7);
  // the zoom buttons' steps: whole pixels per cell from 1 up, and Fit comes back
  view->zoomIn();
  QCOMPARE(view->zoom(), 10.0);
  view->zoomOut();
  QCOMPARE(view->zoom(), 8.0);
  view->zoomOut();
  QCOMPARE(view->zoom(), 6.0);
  view->fitToView();
  QVERIFY(view->fitsView());
  QVERIFY(view->cellRect(255, 255).bottom() < viewport->height());
}

void PatternsTabTest::reachGridMarksTwoHopReach_data() {
  QTest::addColumn<QString>("pattern");
  QTest::addColumn<int>("n");
  QTest::addColumn<int>("l");
  QTest::addColumn<int>("c");
  QTest::addColumn<int>("query");
  QTest::newRow("strided n=64 l=8 q=40") << "strided" << 64 << 8 << 1 << 40;
  QTest::newRow("strided n=64 l=8 q=5") << "strided" << 64 << 8 << 1 << 5;
  QTest::newRow("fixed n=64 l=8 c=2 q=37") << "fixed" << 64 << 8 << 2 << 37;
  QTest::newRow("fixed n=128 l=16 c=4 q=100") << "fixed" << 128 << 16 << 4 << 100;
  QTest::newRow("strided n=128 l=16 q=100") << "strided" << 128 << 16 << 1 << 100;
  QTest::newRow("dense n=16 q=9") << "dense" << 16 << 4 << 1 << 9;
  // A(i) already holds every j <= i here, which the grid takes as a short cut
  QTest::newRow("fixed n=64 l=8 c=8 q=45") << "fixed" << 64 << 8 << 8 << 45;
  QTest::newRow("strided n=32 l=1 q=20") << "strided" << 32 << 1 << 1 << 20;
  QTest::newRow("fixed n=48 l=1 c=1 q=47") << "fixed" << 48 << 1 << 1 << 47;
}

void PatternsTabTest::reachGridMarksTwoHopReach() {
  QFETCH(int, query);
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  const PatternSpec spec = fetched_spec();
  const int n = static_cast<int>(spec.n), l = static_cast<int>(spec.stride);
  show_pattern(tab, spec, query);
  const ReachGridView& grid = *tab.reachGrid();
  QCOMPARE(grid.query(), query);
  QCOMPARE(grid.columns(), l);
  QCOMPARE(grid.rows(), (n + l - 1) / l);
  const auto reach = as_set(stx::engine::two_hop_reach(spec, query));
  const auto a1 = as_set(stx::engine::attended_positions(spec, PatternPart::a1, query));
  const auto a2 = as_set(stx::engine::attended_positions(spec, PatternPart::a2, query));
  using Mark = ReachGridView::Mark;
  for (int p = 0; p < n; ++p) {
    QVERIFY2(grid.inReach(p) == (reach.count(p) > 0), qPrintable(QStringLiteral("position %1").arg(p)));
    Mark want = p > query ? Mark::later : Mark::unreached;
    if (reach.count(p)) want = Mark::reach;
    if (a1.count(p) && a2.count(p)) {
      want = Mark::both;
    } else if (a1.count(p)) {
      want = Mark::a1;
    } else if (a2.count(p)) {
      want = Mark::a2;
    }
    QCOMPARE(grid.mark(p), want);
    // drawn at row p / l, column p % l
    QCOMPARE(grid.gridImage().pixelIndex(p % l, p / l), static_cast<int>(want));
  }
}

void PatternsTabTest::invalidSummaryKeepsPreviousMatrix() {
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  const PatternSpec good = make_spec("fixed", 64, 8, 2);
  show_pattern(tab, good, 30);
  const QImage before = tab.connectivityView()->cellImage().copy();
  const QImage gridBefore = tab.reachGrid()->gridImage().copy();
  QVERIFY(tab.errorText().isEmpty());
  // when c is set above l
  tab.findChild<QSpinBox*>(QStringLiteral("summary"))->setValue(9);
  // then the engine's own message shows inline, and the views keep the last valid pattern
  std::string message;
  try {
    make_spec("fixed", 64, 8, 9).validate();
  } catch (const std::exception& e) {
    message = e.what();
  }
  QVERIFY(!message.empty());
  QVERIFY2(tab.errorText().contains(QString::fromStdString(message)), qPrintable(tab.errorText()));
  QVERIFY(tab.findChild<QLabel*>(QStringLiteral("error"))->isVisibleTo(&tab));
  QCOMPARE(tab.connectivityView()->cellImage(), before);
  QCOMPARE(tab.reachGrid()->gridImage(), gridBefore);
  QCOMPARE(tab.shownSpec().summary, int64_t{2});
  // moving the query meanwhile still works on the shown pattern
  tab.findChild<QSpinBox*>(QStringLiteral("query"))->setValue(31);
  QCOMPARE(tab.reachGrid()->query(), 31);
  QCOMPARE(tab.connectivityView()->cellImage(), before);
  // when c is valid again, the error goes and the matrix follows
  tab.findChild<QSpinBox*>(QStringLiteral("summary"))->setValue(3);
  QVERIFY(tab.errorText().isEmpty());
  QVERIFY(!tab.findChild<QLabel*>(QStringLiteral("error"))->isVisibleTo(&tab));
  QVERIFY(tab.connectivityView()->cellImage() != before);
  for (int query = 0; query < 64; ++query) {
    const QString mismatch = compare_row(*tab.connectivityView(), make_spec("fixed", 64, 8, 3), query);
    QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
  }
  // c only matters for fixed: strided ignores it and the control is disabled
  tab.findChild<QSpinBox*>(QStringLiteral("summary"))->setValue(20);
  QVERIFY(!tab.errorText().isEmpty());
  auto* pattern = tab.findChild<QComboBox*>(QStringLiteral("pattern"));
  pattern->setCurrentIndex(pattern->findData(QStringLiteral("strided")));
  QVERIFY(tab.errorText().isEmpty());
  QVERIFY(!tab.findChild<QSpinBox*>(QStringLiteral("summary"))->isEnabled());
  QCOMPARE(QString::fromStdString(tab.shownSpec().pattern), QStringLiteral("strided"));
}

void PatternsTabTest::settingsRoundTrip() {
  QTemporaryDir folder;
  QVERIFY(folder.isValid());
  const QString file = folder.filePath(QStringLiteral("studio.ini"));
  stx::studio::StudioContext context;
  {
    PatternsTab tab(&context);
    show_pattern(tab, make_spec("fixed", 200, 10, 5), 150);
    tab.findChild<ConnectivityView*>(QStringLiteral("matrix"))->setZoom(3);
    QSettings settings(file, QSettings::IniFormat);
    tab.saveSettings(settings);
  }
  {
    PatternsTab tab(&context);
    QSettings settings(file, QSettings::IniFormat);
    tab.restoreSettings(settings);
    const PatternSpec shown = tab.shownSpec();
    QCOMPARE(QString::fromStdString(shown.pattern), QStringLiteral("fixed"));
    QCOMPARE(shown.n, int64_t{200});
    QCOMPARE(shown.stride, int64_t{10});
    QCOMPARE(shown.summary, int64_t{5});
    QCOMPARE(tab.findChild<QSpinBox*>(QStringLiteral("query"))->value(), 150);
    QCOMPARE(tab.reachGrid()->query(), 150);
    QCOMPARE(tab.connectivityView()->zoom(), 3.0);
    QVERIFY(!tab.connectivityView()->fitsView());
    // "Fit" is remembered as fit, not as the pixels it came to
    tab.findChild<ConnectivityView*>(QStringLiteral("matrix"))->fitToView();
    tab.saveSettings(settings);
  }
  {
    PatternsTab tab(&context);
    QSettings settings(file, QSettings::IniFormat);
    tab.restoreSettings(settings);
    QVERIFY(tab.connectivityView()->fitsView());
  }
}

void PatternsTabTest::largeMatricesBuildQuickly() {
  // Prints how long the 4096-long matrices take (the tab builds them on the GUI thread; the target is well
  // under 50 ms), and checks that the big ones are right too.
  struct Case {
    const char* name;
    PatternSpec spec;
  };
  const Case cases[] = {{"strided n=4096 l=64", make_spec("strided", 4096, 64)},
                        {"dense n=4096", make_spec("dense", 4096, 64)},
                        {"fixed n=4096 l=64 c=8", make_spec("fixed", 4096, 64, 8)},
                        {"fixed n=4096 l=1 c=1 (worst case)", make_spec("fixed", 4096, 1, 1)}};
  for (const Case& test : cases) {
    qint64 best = std::numeric_limits<qint64>::max();
    for (int run = 0; run < 3; ++run) {
      QElapsedTimer timer;
      timer.start();
      const QImage cells = ConnectivityView::buildCells(test.spec);
      best = std::min(best, timer.nsecsElapsed());
      QCOMPARE(cells.width(), 4096);
    }
    qInfo("%s: matrix built in %.1f ms (best of 3)", test.name, best / 1e6);
  }
  // the whole tab, through its controls, then a fitted paint of the 16M cells
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  tab.resize(1200, 760);
  tab.show();
  QVERIFY(QTest::qWaitForWindowExposed(&tab));
  for (const Case& test : cases) {
    // given the pattern one edit away (l one more; dense: n one less), time that one edit as a user makes it
    const bool dense = test.spec.pattern == "dense";
    PatternSpec before = test.spec;
    if (dense) {
      before.n -= 1;
    } else {
      before.stride += 1;
    }
    show_pattern(tab, before, 4000);
    auto* edited = tab.findChild<QSpinBox*>(dense ? QStringLiteral("n") : QStringLiteral("stride"));
    QElapsedTimer timer;
    timer.start();
    edited->setValue(static_cast<int>(dense ? test.spec.n : test.spec.stride));
    const double editMs = timer.nsecsElapsed() / 1e6;
    QCOMPARE(tab.shownSpec().n, test.spec.n);
    QCOMPARE(tab.shownSpec().stride, test.spec.stride);
    timer.restart();
    tab.findChild<QSpinBox*>(QStringLiteral("query"))->setValue(4001);
    const double queryMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    const QPixmap shot = tab.grab();
    const double paintMs = timer.nsecsElapsed() / 1e6;
    timer.restart();
    const QPixmap again = tab.grab();
    qInfo(
        "%s: one edit -> matrix, grid, counts %.1f ms; new query %.1f ms; first fitted paint %.1f ms, next "
        "%.1f ms",
        test.name, editMs, queryMs, paintMs, timer.nsecsElapsed() / 1e6);
    QVERIFY(!shot.isNull() && !again.isNull());
    QVERIFY2(editMs < 1000, "the GUI would freeze");
    for (const int query : {0, 63, 64, 1000, 4000, 4095}) {
      const QString mismatch = compare_row(*tab.connectivityView(), test.spec, query);
      QVERIFY2(mismatch.isEmpty(), qPrintable(mismatch));
    }
  }
}

void PatternsTabTest::followsPaletteChange() {
  // given a tab on the default (light) palette
  stx::studio::StudioContext context;
  PatternsTab tab(&context);
  show_pattern(tab, make_spec("strided", 64, 8), 20);
  const auto none = static_cast<int>(ConnectivityView::Cell::none);
  QCOMPARE(QColor(tab.connectivityView()->cellImage().color(none)), tab.palette().color(QPalette::Base));
  // when the user switches to a dark theme, then empty cells take the new base and the A1 colour changes
  const QRgb a1Before =
      tab.connectivityView()->cellImage().color(static_cast<int>(ConnectivityView::Cell::a1));
  tab.setPalette(dark_palette());
  QCOMPARE(QColor(tab.connectivityView()->cellImage().color(none)), dark_palette().color(QPalette::Base));
  QVERIFY(tab.connectivityView()->cellImage().color(static_cast<int>(ConnectivityView::Cell::a1)) !=
          a1Before);
  const auto unreached = static_cast<int>(ReachGridView::Mark::unreached);
  QCOMPARE(QColor(tab.reachGrid()->gridImage().color(unreached)), dark_palette().color(QPalette::Base));
}

QTEST_MAIN(PatternsTabTest)
#include "test_patterns.moc"
