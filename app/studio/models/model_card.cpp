#include "models/model_card.h"

#include <QFileInfo>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QLocale>
#include <QStackedLayout>
#include <QTextBrowser>
#include <QVBoxLayout>

#include "core/model_text.h"

namespace stx::studio {

namespace {

QString with_short_form(qint64 n) {
  const QString full = QLocale().toString(n);
  const QString short_form = format_count(n);
  return short_form == QString::number(n) ? full : QStringLiteral("%1 (%2)").arg(full, short_form);
}

QLineEdit* path_field(const QString& objectName) {
  // A path has no spaces to wrap at; a read-only line edit shows it whole (scrolling) and lets it be copied.
  auto* field = new QLineEdit;
  field->setObjectName(objectName);
  field->setReadOnly(true);
  field->setFrame(false);
  field->setStyleSheet(QStringLiteral("QLineEdit { background: transparent; }"));
  return field;
}

}  // namespace

ModelCard::ModelCard(QWidget* parent) : QWidget(parent) {
  message_ = new QLabel;
  message_->setObjectName(QStringLiteral("message"));
  message_->setAlignment(Qt::AlignCenter);
  message_->setWordWrap(true);
  message_->setEnabled(false);  // greyed, like any placeholder

  title_ = new QLabel;
  title_->setObjectName(QStringLiteral("title"));
  QFont big = title_->font();
  big.setPointSizeF(big.pointSizeF() * 1.5);
  big.setBold(true);
  title_->setFont(big);
  title_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  subtitle_ = new QLabel;
  subtitle_->setObjectName(QStringLiteral("subtitle"));
  QFont italic = subtitle_->font();
  italic.setItalic(true);
  subtitle_->setFont(italic);
  error_ = new QLabel;
  error_->setObjectName(QStringLiteral("error"));
  error_->setWordWrap(true);
  error_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  error_->setStyleSheet(QStringLiteral("color: #c62828;"));

  facts_ = new QFormLayout;
  facts_->setLabelAlignment(Qt::AlignRight);
  facts_->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
  name_ = addFact(tr("Name in its config"), QStringLiteral("name"));
  kind_ = addFact(tr("Kind"), QStringLiteral("kind"));
  parameters_ = addFact(tr("Parameters"), QStringLiteral("parameters"));
  pattern_ = addFact(tr("Attention pattern"), QStringLiteral("pattern"));
  mode_ = addFact(tr("Pattern mode"), QStringLiteral("mode"));
  context_ = addFact(tr("Context"), QStringLiteral("context"));
  shape_ = addFact(tr("Layers × heads × d_model"), QStringLiteral("shape"));
  steps_ = addFact(tr("Steps trained"), QStringLiteral("steps"));
  bitsPerByte_ = addFact(tr("Bits/byte"), QStringLiteral("bitsPerByte"));
  folder_ = path_field(QStringLiteral("folder"));
  facts_->addRow(tr("Folder"), folder_);
  checkpoint_ = path_field(QStringLiteral("checkpoint"));
  facts_->addRow(tr("Latest checkpoint"), checkpoint_);

  cardHeading_ = new QLabel(tr("<b>Model card</b>"));
  cardText_ = new QTextBrowser;
  cardText_->setObjectName(QStringLiteral("cardText"));
  cardText_->setOpenExternalLinks(true);
  cardText_->setPlaceholderText(
      tr("This model has no MODEL_CARD.md. Training writes one; you can also add "
         "your own beside config.json."));

  auto* details = new QWidget;
  auto* column = new QVBoxLayout(details);
  column->setContentsMargins(0, 0, 0, 0);
  column->addWidget(title_);
  column->addWidget(subtitle_);
  column->addWidget(error_);
  column->addLayout(facts_);
  column->addSpacing(6);
  column->addWidget(cardHeading_);
  column->addWidget(cardText_, 1);
  column->addStretch(0);  // takes the space when the card text is hidden (an unreadable model)
  column_ = column;

  pages_ = new QStackedLayout(this);
  pages_->addWidget(message_);
  pages_->addWidget(details);
  showMessage(tr("Select a model to see its card."));
}

QLabel* ModelCard::addFact(const QString& label, const QString& objectName) {
  auto* value = new QLabel;
  value->setObjectName(objectName);
  value->setWordWrap(true);
  value->setTextInteractionFlags(Qt::TextSelectableByMouse);
  facts_->addRow(label, value);
  return value;
}

void ModelCard::setFactVisible(QLabel* value, bool visible) { facts_->setRowVisible(value, visible); }

void ModelCard::showMessage(const QString& message) {
  path_.clear();
  message_->setText(message);
  pages_->setCurrentIndex(0);
}

void ModelCard::showEntry(const LibraryEntry& entry) {
  const QLocale locale;
  path_ = entry.path;
  pages_->setCurrentIndex(1);
  title_->setText(QFileInfo(entry.path).fileName());
  folder_->setText(entry.path);
  folder_->setCursorPosition(0);
  folder_->setToolTip(entry.path);
  subtitle_->setText(entry.bundled ? tr("Bundled with STX Studio · read-only") : tr("In your library"));

  const bool readable = entry.error.isEmpty();
  error_->setVisible(!readable);
  error_->setText(readable ? QString() : tr("This model cannot be read: %1").arg(entry.error));
  for (QLabel* fact : {name_, kind_, parameters_, pattern_, mode_, context_, shape_, steps_, bitsPerByte_}) {
    setFactVisible(fact, readable);
  }
  cardHeading_->setVisible(readable);
  cardText_->setVisible(readable);
  column_->setStretch(column_->count() - 1, readable ? 0 : 1);  // facts stay at the top, not spread out
  facts_->setRowVisible(checkpoint_, false);
  if (!readable) {
    cardText_->clear();
    return;
  }

  const stx::engine::ModelSummary& s = entry.summary;
  const QString configName = QString::fromStdString(s.name);
  name_->setText(configName);
  setFactVisible(name_, !configName.isEmpty() && configName != title_->text());

  QString kind = QString::fromStdString(s.kind);
  if (s.kind == "image") {
    kind += tr(" · %1 × %2 × %3 (height × width × channels)")
                .arg(s.image_height)
                .arg(s.image_width)
                .arg(s.image_channels);
  } else if (s.kind == "audio") {
    kind += tr(" · 8-bit µ-law at 12 kHz");
  } else if (s.kind == "text") {
    kind += tr(" · byte-level");
  }
  kind_->setText(kind);
  parameters_->setText(with_short_form(s.parameters));
  pattern_->setText(pattern_text(s));
  mode_->setText(QString::fromStdString(s.mode));
  context_->setText(tr("%1 bytes").arg(locale.toString(s.context)));
  shape_->setText(tr("%1 × %2 × %3 (feed-forward %4)").arg(s.layers).arg(s.heads).arg(s.d_model).arg(s.d_ff));

  if (s.steps_planned > 0) {
    QString steps = tr("%1 of %2").arg(locale.toString(s.steps_trained), locale.toString(s.steps_planned));
    if (s.steps_trained < s.steps_planned) steps += tr(" · stopped early, can be resumed");
    steps_->setText(steps);
  } else if (s.steps_trained > 0) {
    steps_->setText(locale.toString(s.steps_trained));
  } else {
    steps_->setText(tr("none on record"));
  }
  if (!s.bits_per_byte) {
    bitsPerByte_->setText(tr("none on record"));
  } else {
    // Say where the figure comes from: a few validation windows during training can be far from the whole
    // held-out set.
    bitsPerByte_->setText((s.bits_per_byte_held_out ? tr("%1 on every held-out byte")
                                                    : tr("%1 at the last validation during training"))
                              .arg(*s.bits_per_byte, 0, 'f', 3));
  }

  // A run folder resolves to its latest checkpoint: say which one the facts come from.
  const QString checkpoint = QString::fromStdString(s.folder.string());
  const bool isRun = !checkpoint.isEmpty() &&
                     QFileInfo(checkpoint).absoluteFilePath() != QFileInfo(entry.path).absoluteFilePath();
  checkpoint_->setText(checkpoint);
  checkpoint_->setCursorPosition(0);
  facts_->setRowVisible(checkpoint_, isRun);

  // Relative links and images in the card resolve against the model's own folders.
  cardText_->setSearchPaths({checkpoint.isEmpty() ? entry.path : checkpoint, entry.path});
  cardText_->setMarkdown(QString::fromStdString(s.card));
}

}  // namespace stx::studio
