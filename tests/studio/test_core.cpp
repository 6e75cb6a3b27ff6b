// Controls every generation tab shares (app/studio/core/): the attention layer and head pickers name
// layers and heads alike in all three tabs, counted from 1, and keep the user's choice across models; counts
// in messages read "1 sample", "2 samples", never "sample(s)".
#include <QApplication>
#include <QComboBox>
#include <QSettings>
#include <QSignalSpy>
#include <QStringList>
#include <QTemporaryDir>
#include <QTest>

#include "core/counted_text.h"
#include "core/layer_head_picker.h"

using stx::studio::LayerHeadPicker;

namespace {

QStringList items(const QComboBox* box) {
  QStringList texts;
  for (int i = 0; i < box->count(); ++i) texts << box->itemText(i);
  return texts;
}

// What a user does: picks the entry whose value is `value`.
void pick(QComboBox* box, int value) {
  const int index = box->findData(value);
  QVERIFY2(index >= 0, qPrintable(QString("no entry for %1").arg(value)));
  box->setCurrentIndex(index);
}

}  // namespace

class CoreTest : public QObject {
  Q_OBJECT

 private slots:
  void countsReadAsEnglishWithoutATranslation() {
    const QString one = QStringLiteral("1 sample"), many = QStringLiteral("%1 samples");
    QCOMPARE(stx::studio::counted(1, one, many), one);
    QCOMPARE(stx::studio::counted(0, one, many), QStringLiteral("0 samples"));
    QCOMPARE(stx::studio::counted(2, one, many), QStringLiteral("2 samples"));
  }

  void pickersNameLayersAndHeadsFromOne() {
    LayerHeadPicker picker(LayerHeadPicker::kAllHeads);
    QVERIFY(!picker.layerBox()->isEnabled());
    QCOMPARE(picker.layer(), -1);  // no model open yet
    QCOMPARE(picker.head(), LayerHeadPicker::kAllHeads);

    picker.setShape(2, 3);
    QVERIFY(picker.layerBox()->isEnabled() && picker.headBox()->isEnabled());
    QCOMPARE(items(picker.layerBox()), (QStringList{"Layer 1", "Layer 2"}));
    QCOMPARE(items(picker.headBox()), (QStringList{"All heads (average)", "Head 1", "Head 2", "Head 3"}));
    QCOMPARE(picker.layer(), 0);
    QCOMPARE(picker.head(), LayerHeadPicker::kAllHeads);

    QCOMPARE(LayerHeadPicker::describe(1, 2), QStringLiteral("layer 2, head 3"));
    QCOMPARE(LayerHeadPicker::describe(0, LayerHeadPicker::kAllHeads),
             QStringLiteral("layer 1, all heads (average)"));
  }

  void theChoiceOutlivesAModelThatLacksIt() {
    LayerHeadPicker picker(0);
    QSignalSpy changed(&picker, &LayerHeadPicker::changed);
    picker.setShape(4, 4);
    QCOMPARE(changed.count(), 0);  // filling the lists is not a choice
    QCOMPARE(picker.head(), 0);
    pick(picker.layerBox(), 3);
    pick(picker.headBox(), 2);
    QCOMPARE(changed.count(), 2);
    QCOMPARE(picker.layer(), 3);
    QCOMPARE(picker.head(), 2);

    // A smaller model shows what it has, without counting that as the user's choice...
    picker.setShape(2, 2);
    QCOMPARE(changed.count(), 2);
    QCOMPARE(picker.layer(), 0);
    QCOMPARE(picker.head(), LayerHeadPicker::kAllHeads);
    // ...so the next model that has layer 4, head 3 gets them back.
    picker.setShape(4, 4);
    QCOMPARE(picker.layer(), 3);
    QCOMPARE(picker.head(), 2);

    picker.setShape(0, 0);
    QVERIFY(!picker.layerBox()->isEnabled());
    QCOMPARE(picker.layer(), -1);
  }

  void settingsKeepTheChoiceUnderTheTabsKeys() {
    QTemporaryDir dir;
    QVERIFY(dir.isValid());
    const QString file = dir.filePath("settings.ini");
    {
      LayerHeadPicker picker(0);
      picker.setShape(3, 2);
      pick(picker.layerBox(), 2);
      pick(picker.headBox(), LayerHeadPicker::kAllHeads);
      QSettings settings(file, QSettings::IniFormat);
      picker.save(settings, "probeLayer", "probeHead");
    }
    QSettings settings(file, QSettings::IniFormat);
    QCOMPARE(settings.value("probeLayer").toInt(), 2);
    QCOMPARE(settings.value("probeHead").toInt(), LayerHeadPicker::kAllHeads);
    // Restored before any model is open (as at start-up), applied once one is.
    LayerHeadPicker again(0);
    QSignalSpy changed(&again, &LayerHeadPicker::changed);
    again.restore(settings, "probeLayer", "probeHead");
    QCOMPARE(changed.count(), 1);
    QCOMPARE(again.head(), LayerHeadPicker::kAllHeads);
    again.setShape(3, 2);
    QCOMPARE(again.layer(), 2);
    QCOMPARE(again.head(), LayerHeadPicker::kAllHeads);
    QCOMPARE(again.headBox()->currentText(), QStringLiteral("All heads (average)"));
  }
};

QTEST_MAIN(CoreTest)
#include "test_core.moc"
