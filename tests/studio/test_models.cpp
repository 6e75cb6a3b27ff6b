// The Models tab: the library list and its card, import, rename, delete, unreadable models, opening a model
// in its tab, filters and remembered settings. Every test gets a fresh user library (STX_STUDIO_MODELS_DIR)
// filled with tiny models made on the spot.
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QInputDialog>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QMessageBox>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSplitter>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTextBrowser>
#include <QTextDocument>
#include <QTimer>
#include <QTreeWidget>
#include <functional>
#include <memory>

#include "core/model_library.h"
#include "core/model_text.h"
#include "core/studio_context.h"
#include "models/model_card.h"
#include "models/model_scanner.h"
#include "models/models_tab.h"
#include "studio_test_support.h"
#include "stx/engine/model_session.h"

using stx::studio::ModelCard;
using stx::studio::ModelLibrary;
using stx::studio::ModelsTab;
using stx::studio::StudioContext;
using stx::studio::test::make_tiny_model;
using stx::studio::test::wait_until;

namespace {

// Answers the next modal dialog (QMessageBox, QInputDialog) from inside the event loop its exec() runs.
void answer_next_dialog(const std::function<void(QWidget*)>& answer) {
  auto* timer = new QTimer;
  auto tries = std::make_shared<int>(0);
  QObject::connect(timer, &QTimer::timeout, [timer, tries, answer] {
    QWidget* dialog = QApplication::activeModalWidget();
    if (!dialog && ++*tries < 500) return;
    timer->stop();
    timer->deleteLater();
    if (dialog) answer(dialog);
  });
  timer->start(20);
}

void write_file(const QString& path, const QByteArray& bytes) {
  QFile file(path);
  QVERIFY(file.open(QIODevice::WriteOnly));
  file.write(bytes);
}

QTreeWidgetItem* item_named(const QTreeWidget* list, const QString& name) {
  for (int i = 0; i < list->topLevelItemCount(); ++i) {
    if (list->topLevelItem(i)->text(0).startsWith(name)) return list->topLevelItem(i);
  }
  return nullptr;
}

QString card_text(const ModelsTab& tab, const char* field) {
  const auto* label = tab.card()->findChild<QLabel*>(QString::fromLatin1(field));
  return label ? label->text() : QStringLiteral("<no %1 label>").arg(QLatin1String(field));
}

QAction* action(const ModelsTab& tab, const char* name) {
  return tab.findChild<QAction*>(QString::fromLatin1(name));
}

bool settled(const ModelsTab& tab) {
  return wait_until([&] { return !tab.scanning(); });
}

}  // namespace

class ModelsTabTest : public QObject {
  Q_OBJECT

 private:
  std::unique_ptr<QTemporaryDir> library_;
  QString user(const QString& name) const { return QDir(library_->path()).filePath(name); }

 private slots:
  void init() {
    // given: an empty user library of its own for every test
    library_ = std::make_unique<QTemporaryDir>();
    QVERIFY(library_->isValid());
    qputenv("STX_STUDIO_MODELS_DIR", library_->path().toUtf8());
  }

  void theStatusBarNamesTheModelSelectedNow() {
    make_tiny_model(user("pixels"), "image");
    make_tiny_model(user("prose"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy status(&context, &StudioContext::statusChanged);

    // when one model and then another is selected
    tab.selectModel(user("pixels"));
    tab.selectModel(user("prose"));

    // then the status the tab last gave names the second, not the one selected when the tab came to the front
    QVERIFY(!status.isEmpty());
    QCOMPARE(status.last().at(0).value<const QObject*>(), static_cast<const QObject*>(&tab));
    QCOMPARE(status.last().at(1).toString(), QStringLiteral("prose"));
  }

  void listsModelsWithTheFactsOfTheirCards() {
    make_tiny_model(user("pixels"), "image");
    make_tiny_model(user("voice"), "audio");
    make_tiny_model(user("prose"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));

    for (const auto& [name, kind] : {std::pair{"pixels", "image"}, {"voice", "audio"}, {"prose", "text"}}) {
      const QString path = user(name);
      const stx::engine::ModelSummary truth = stx::engine::describe_model(path.toStdString());
      QTreeWidgetItem* item = item_named(tab.list(), name);
      QVERIFY2(item, name);
      QVERIFY(item->text(1).startsWith(kind));
      QCOMPARE(item->text(2), stx::studio::format_count(truth.parameters));
      QCOMPARE(item->text(4), QString());  // not bundled

      tab.selectModel(path);
      QCOMPARE(tab.card()->path(), tab.selectedPath());
      QCOMPARE(QFileInfo(tab.selectedPath()).canonicalFilePath(), QFileInfo(path).canonicalFilePath());
      QVERIFY(card_text(tab, "title") == name);
      QVERIFY(card_text(tab, "kind").startsWith(kind));
      QVERIFY2(card_text(tab, "parameters").startsWith(QLocale().toString(truth.parameters)),
               qPrintable(card_text(tab, "parameters")));
      QCOMPARE(card_text(tab, "context"), QStringLiteral("%1 bytes").arg(QLocale().toString(truth.context)));
      QCOMPARE(tab.card()->findChild<QLineEdit*>("folder")->text(), tab.selectedPath());
    }
    tab.selectModel(user("pixels"));
    QVERIFY2(card_text(tab, "kind").contains("8 × 8 × 1"), qPrintable(card_text(tab, "kind")));
    QCOMPARE(item_named(tab.list(), "pixels")->text(1), QStringLiteral("image 8×8×1"));
  }

  void textCardShowsPatternShapeAndMarkdown() {
    make_tiny_model(user("prose"), "text");
    write_file(user("prose/MODEL_CARD.md"), "# Prose model\n\nTrained on **short poems**.\n\n- one\n- two\n");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    tab.selectModel(user("prose"));

    QCOMPARE(card_text(tab, "pattern"), QStringLiteral("fixed l=16 c=4"));
    QCOMPARE(card_text(tab, "context"), QStringLiteral("128 bytes"));
    QVERIFY2(card_text(tab, "shape").startsWith(QStringLiteral("2 × 2 × 32")),
             qPrintable(card_text(tab, "shape")));
    QVERIFY(!card_text(tab, "mode").isEmpty());
    QCOMPARE(card_text(tab, "steps"), QStringLiteral("none on record"));
    QCOMPARE(card_text(tab, "bitsPerByte"), QStringLiteral("none on record"));
    // Rendered, not shown as source: no '#' or '**' left, the heading is a heading.
    const QTextBrowser* markdown = tab.card()->findChild<QTextBrowser*>("cardText");
    const QString shown = markdown->toPlainText();
    QVERIFY2(shown.contains("Trained on short poems."), qPrintable(shown));
    QVERIFY(!shown.contains('#') && !shown.contains("**"));
    QCOMPARE(markdown->document()->firstBlock().blockFormat().headingLevel(), 1);
  }

  void importCopiesAFolderIntoTheLibrary() {
    QTemporaryDir elsewhere;
    const QString source = make_tiny_model(QDir(elsewhere.path()).filePath("downloaded"), "audio");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy changed(&tab, &ModelsTab::libraryChanged);
    QSignalSpy errors(&context, &StudioContext::errorShown);

    // when: imported under a new name; the prompt offers the folder's own name first
    QString offered;
    answer_next_dialog([&](QWidget* dialog) {
      auto* input = qobject_cast<QInputDialog*>(dialog);
      QVERIFY(input);
      offered = input->textValue();
      input->setTextValue("my-voice");
      input->accept();
    });
    tab.importFolder(source);
    QVERIFY(wait_until([&] { return !tab.scanning() && changed.count() == 1; }));

    // then: the copy exists, is listed and selected, and reads as the same model; the source is untouched
    QCOMPARE(offered, QStringLiteral("downloaded"));
    QCOMPARE(errors.count(), 0);
    QVERIFY(QFileInfo::exists(user("my-voice/config.json")));
    QVERIFY(item_named(tab.list(), "my-voice"));
    QCOMPARE(QFileInfo(tab.selectedPath()).canonicalFilePath(),
             QFileInfo(user("my-voice")).canonicalFilePath());
    const stx::engine::ModelSummary copy = stx::engine::describe_model(user("my-voice").toStdString());
    QCOMPARE(QString::fromStdString(copy.kind), QStringLiteral("audio"));
    QCOMPARE(copy.parameters, stx::engine::describe_model(source.toStdString()).parameters);
    QVERIFY(QFileInfo::exists(source + "/config.json"));
  }

  void importOfANonModelFolderShowsAnErrorAndAddsNothing() {
    make_tiny_model(user("prose"), "text");
    QTemporaryDir notes;
    write_file(QDir(notes.path()).filePath("notes.txt"), "not a model");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy changed(&tab, &ModelsTab::libraryChanged);
    QSignalSpy errors(&context, &StudioContext::errorShown);

    answer_next_dialog([](QWidget* dialog) { qobject_cast<QInputDialog*>(dialog)->accept(); });
    tab.importFolder(notes.path());
    QVERIFY(wait_until([&] { return !tab.importing() && errors.count() == 1; }));
    QVERIFY(settled(tab));

    const QString message = errors.at(0).at(0).toString();
    QVERIFY2(message.contains(notes.path()), qPrintable(message));
    QVERIFY2(message.contains("not a model folder"), qPrintable(message));
    QCOMPARE(changed.count(), 0);
    QCOMPARE(QDir(library_->path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden),
             QStringList{"prose"});
    QCOMPARE(tab.list()->topLevelItemCount(), 1);
  }

  void importUnderATakenNameShowsAnErrorAndKeepsTheOriginal() {
    make_tiny_model(user("prose"), "text");
    QTemporaryDir elsewhere;
    const QString source = make_tiny_model(QDir(elsewhere.path()).filePath("prose"), "image");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy errors(&context, &StudioContext::errorShown);

    answer_next_dialog([](QWidget* dialog) { qobject_cast<QInputDialog*>(dialog)->accept(); });  // "prose"
    tab.importFolder(source);
    QVERIFY(wait_until([&] { return !tab.importing() && errors.count() == 1; }));

    QVERIFY2(errors.at(0).at(0).toString().contains("already exists"),
             qPrintable(errors.at(0).at(0).toString()));
    QCOMPARE(stx::engine::describe_model(user("prose").toStdString()).kind, std::string("text"));
  }

  void renameChangesTheFolderAndTheList() {
    make_tiny_model(user("draft"), "text");
    make_tiny_model(user("other"), "audio");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy changed(&tab, &ModelsTab::libraryChanged);
    tab.selectModel(user("draft"));
    QVERIFY(action(tab, "renameAction")->isEnabled());

    answer_next_dialog([](QWidget* dialog) {
      auto* input = qobject_cast<QInputDialog*>(dialog);
      QCOMPARE(input->textValue(), QStringLiteral("draft"));
      input->setTextValue("final");
      input->accept();
    });
    tab.renameSelected();
    QVERIFY(settled(tab));

    QVERIFY(!QFileInfo::exists(user("draft")));
    QVERIFY(QFileInfo::exists(user("final/config.json")));
    QVERIFY(item_named(tab.list(), "final"));
    QVERIFY(!item_named(tab.list(), "draft"));
    QCOMPARE(QFileInfo(tab.selectedPath()).fileName(), QStringLiteral("final"));
    QCOMPARE(card_text(tab, "title"), QStringLiteral("final"));
    QCOMPARE(changed.count(), 1);

    // when: renamed to a name that is taken, then: an error, and both models as they were
    QSignalSpy errors(&context, &StudioContext::errorShown);
    answer_next_dialog([](QWidget* dialog) {
      auto* input = qobject_cast<QInputDialog*>(dialog);
      input->setTextValue("other");
      input->accept();
    });
    tab.renameSelected();
    QCOMPARE(errors.count(), 1);
    QVERIFY2(errors.at(0).at(0).toString().contains("already exists"),
             qPrintable(errors.at(0).at(0).toString()));
    QCOMPARE(stx::engine::describe_model(user("other").toStdString()).kind, std::string("audio"));
    QVERIFY(QFileInfo::exists(user("final/config.json")));
  }

  void deleteAsksFirstAndCancelKeepsTheModel() {
    make_tiny_model(user("keep-me"), "image");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy changed(&tab, &ModelsTab::libraryChanged);
    tab.selectModel(user("keep-me"));

    QString asked;
    answer_next_dialog([&](QWidget* dialog) {
      auto* box = qobject_cast<QMessageBox*>(dialog);
      QVERIFY(box);
      asked = box->text();
      box->button(QMessageBox::Cancel)->click();
    });
    tab.deleteSelected();
    QVERIFY(settled(tab));

    QVERIFY2(asked.contains("keep-me"), qPrintable(asked));
    QVERIFY(QFileInfo::exists(user("keep-me/config.json")));
    QVERIFY(item_named(tab.list(), "keep-me"));
    QCOMPARE(changed.count(), 0);
  }

  void deleteAfterConfirmationRemovesTheModel() {
    make_tiny_model(user("doomed"), "image");
    make_tiny_model(user("survivor"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    QSignalSpy changed(&tab, &ModelsTab::libraryChanged);
    tab.selectModel(user("doomed"));

    answer_next_dialog([](QWidget* dialog) {
      auto* box = qobject_cast<QMessageBox*>(dialog);
      QVERIFY(box && box->text().contains("doomed"));
      for (QAbstractButton* button : box->buttons()) {
        if (box->buttonRole(button) == QMessageBox::DestructiveRole) button->click();
      }
    });
    tab.deleteSelected();
    QVERIFY(settled(tab));

    QVERIFY(!QFileInfo::exists(user("doomed")));
    QVERIFY(!item_named(tab.list(), "doomed"));
    QCOMPARE(QFileInfo(tab.selectedPath()).fileName(), QStringLiteral("survivor"));  // the neighbour
    QCOMPARE(changed.count(), 1);
    QCOMPARE(QDir(library_->path()).entryList(QDir::Dirs | QDir::NoDotAndDotDot | QDir::Hidden),
             QStringList{"survivor"});
  }

  void bundledModelsAreMarkedAndCannotBeRenamedOrDeleted() {
    QTemporaryDir shipped;
    make_tiny_model(QDir(shipped.path()).filePath("starter"), "image");
    make_tiny_model(user("mine"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    tab.scanner()->setFolders({shipped.path()}, ModelLibrary::userFolder());
    tab.refreshModels();
    QVERIFY(settled(tab));

    QTreeWidgetItem* starter = item_named(tab.list(), "starter");
    QVERIFY(starter);
    QCOMPARE(starter->text(4), QStringLiteral("bundled"));
    QCOMPARE(tab.list()->indexOfTopLevelItem(starter), 0);  // bundled first
    tab.selectModel(QDir(shipped.path()).filePath("starter"));
    QVERIFY(card_text(tab, "subtitle").contains("read-only"));
    QVERIFY(action(tab, "openAction")->isEnabled());
    QVERIFY(action(tab, "revealAction")->isEnabled());
    QVERIFY(!action(tab, "renameAction")->isEnabled());
    QVERIFY(!action(tab, "deleteAction")->isEnabled());
    tab.deleteSelected();  // no dialog, nothing happens
    QVERIFY(QFileInfo::exists(QDir(shipped.path()).filePath("starter/config.json")));

    tab.selectModel(user("mine"));
    QVERIFY(action(tab, "renameAction")->isEnabled());
    QVERIFY(action(tab, "deleteAction")->isEnabled());
  }

  void corruptModelIsListedWithItsError() {
    make_tiny_model(user("fine"), "text");
    QDir().mkpath(user("broken"));
    write_file(user("broken/config.json"), "garbage {{{ not json");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));

    QTreeWidgetItem* broken = item_named(tab.list(), "broken");
    QVERIFY(broken);
    QVERIFY(!broken->isHidden());
    QVERIFY2(broken->text(0).contains("cannot be read"), qPrintable(broken->text(0)));
    QCOMPARE(broken->foreground(0).color(), QColor(0xc6, 0x28, 0x28));
    tab.selectModel(user("broken"));
    const auto* error = tab.card()->findChild<QLabel*>("error");
    QVERIFY(!error->isHidden());
    QVERIFY2(error->text().contains("config.json"), qPrintable(error->text()));
    QVERIFY(!action(tab, "openAction")->isEnabled());   // nothing to open
    QVERIFY(action(tab, "deleteAction")->isEnabled());  // but it can be cleaned up

    // An unreadable model has no kind: a kind filter does not hide it.
    tab.kindFilter()->setCurrentIndex(tab.kindFilter()->findData("image"));
    QVERIFY(!broken->isHidden());
    QVERIFY(item_named(tab.list(), "fine")->isHidden());
  }

  void openModelRequestedCarriesKindAndPath() {
    make_tiny_model(user("pixels"), "image");
    make_tiny_model(user("prose"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    tab.resize(1000, 600);
    tab.show();
    QVERIFY(QTest::qWaitForWindowExposed(&tab));
    QVERIFY(settled(tab));
    QSignalSpy opened(&tab, &ModelsTab::openModelRequested);

    tab.selectModel(user("pixels"));
    action(tab, "openAction")->trigger();
    QCOMPARE(opened.count(), 1);
    QCOMPARE(opened.at(0).at(0).toString(), QStringLiteral("image"));
    QCOMPARE(QFileInfo(opened.at(0).at(1).toString()).canonicalFilePath(),
             QFileInfo(user("pixels")).canonicalFilePath());

    // Double-click opens too.
    QTreeWidgetItem* prose = item_named(tab.list(), "prose");
    const QPoint at = tab.list()->visualItemRect(prose).center();
    // A real double-click is press, release, then the double-click event; QTest's mouseDClick sends only the last.
    QTest::mouseClick(tab.list()->viewport(), Qt::LeftButton, {}, at);
    QTest::mouseDClick(tab.list()->viewport(), Qt::LeftButton, {}, at);
    QVERIFY(wait_until([&] { return opened.count() == 2; }, 2000));
    QCOMPARE(opened.at(1).at(0).toString(), QStringLiteral("text"));
    QCOMPARE(QFileInfo(opened.at(1).at(1).toString()).canonicalFilePath(),
             QFileInfo(user("prose")).canonicalFilePath());

    QSignalSpy train(&tab, &ModelsTab::trainRequested);
    action(tab, "trainAction")->trigger();
    QCOMPARE(train.count(), 1);
  }

  void kindFilterAndSearchNarrowTheList() {
    make_tiny_model(user("pixels"), "image");
    make_tiny_model(user("voice"), "audio");
    make_tiny_model(user("prose"), "text");
    StudioContext context;
    ModelsTab tab(&context);
    QVERIFY(settled(tab));
    auto visible = [&] {
      QStringList names;
      for (int i = 0; i < tab.list()->topLevelItemCount(); ++i) {
        if (!tab.list()->topLevelItem(i)->isHidden()) names << tab.list()->topLevelItem(i)->text(0);
      }
      return names;
    };
    QCOMPARE(visible(), (QStringList{"pixels", "prose", "voice"}));
    tab.kindFilter()->setCurrentIndex(tab.kindFilter()->findData("audio"));
    QCOMPARE(visible(), QStringList{"voice"});
    QCOMPARE(QFileInfo(tab.selectedPath()).fileName(), QStringLiteral("voice"));  // the card follows
    tab.kindFilter()->setCurrentIndex(0);
    tab.searchBox()->setText("PRO");
    QCOMPARE(visible(), QStringList{"prose"});
    tab.searchBox()->setText("nothing like it");
    QCOMPARE(visible(), QStringList{});
    QVERIFY(tab.selectedPath().isEmpty());
    QVERIFY(!action(tab, "openAction")->isEnabled());
  }

  void settingsRememberFilterSelectionAndSplitter() {
    make_tiny_model(user("pixels"), "image");
    make_tiny_model(user("prose"), "text");
    QTemporaryDir config;
    const QString file = QDir(config.path()).filePath("studio.ini");
    QByteArray splitterState;
    {
      StudioContext context;
      ModelsTab tab(&context);
      QVERIFY(settled(tab));
      tab.kindFilter()->setCurrentIndex(tab.kindFilter()->findData("text"));
      tab.selectModel(user("prose"));
      tab.findChild<QSplitter*>()->setSizes({300, 700});
      splitterState = tab.findChild<QSplitter*>()->saveState();
      QSettings settings(file, QSettings::IniFormat);
      tab.saveSettings(settings);
    }
    StudioContext context;
    ModelsTab tab(&context);
    QSettings settings(file, QSettings::IniFormat);
    tab.restoreSettings(settings);  // before the scan is done, as at start-up
    QVERIFY(settled(tab));
    QCOMPARE(tab.kindFilter()->currentData().toString(), QStringLiteral("text"));
    QCOMPARE(QFileInfo(tab.selectedPath()).fileName(), QStringLiteral("prose"));
    QCOMPARE(tab.findChild<QSplitter*>()->saveState(), splitterState);
  }

  void constructionDoesNotWaitForTheScan() {
    for (int i = 0; i < 24; ++i)
      make_tiny_model(user(QStringLiteral("model-%1").arg(i, 2, 10, QLatin1Char('0'))), "text");
    StudioContext context;
    ModelsTab tab(&context);
    // The list fills from the event loop once the scan thread is done; the constructor returned at once.
    QVERIFY(tab.scanning());
    QCOMPARE(tab.list()->topLevelItemCount(), 0);
    QVERIFY(settled(tab));
    QCOMPARE(tab.list()->topLevelItemCount(), 24);
    // Refresh while a scan runs: the result is that of the folders after the last call.
    tab.refreshModels();
    QVERIFY(ModelLibrary::isUserModel(user("model-00")));
    ModelLibrary::deleteModel(user("model-00"));
    tab.refreshModels();
    QVERIFY(settled(tab));
    QCOMPARE(tab.list()->topLevelItemCount(), 23);
  }
};

QTEST_MAIN(ModelsTabTest)
#include "test_models.moc"
