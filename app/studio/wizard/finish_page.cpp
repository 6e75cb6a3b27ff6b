#include "wizard/finish_page.h"

#include <QDir>
#include <QLabel>
#include <QLocale>
#include <QVBoxLayout>

#include "core/model_library.h"
#include "core/model_text.h"
#include "wizard/run_page.h"
#include "wizard/train_wizard.h"

namespace stx::studio {

FinishPage::FinishPage(QWidget* parent) : QWizardPage(parent) {
  setTitle(tr("Done"));
  setSubTitle(tr("Your model is saved."));
  setFinalPage(true);
  text_ = new QLabel;
  text_->setWordWrap(true);
  text_->setTextFormat(Qt::RichText);
  text_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* column = new QVBoxLayout(this);
  column->addWidget(text_);
  column->addStretch();
}

void FinishPage::initializePage() {
  const auto* wizard = qobject_cast<const TrainWizard*>(this->wizard());
  if (!wizard) return;
  const QString folder = wizard->runFolder();
  const QString kind = wizard->kind();
  const LibraryEntry entry = ModelLibrary::describe(folder);
  const QLocale locale;
  QStringList lines;
  lines << tr("The new %1 model is in<br><b>%2</b>")
               .arg(kind, QDir::toNativeSeparators(folder).toHtmlEscaped());
  bitsPerByte_ = -1;
  if (const std::optional<double> last = wizard->runPage()->lastValidation()) {
    bitsPerByte_ = *last;
  } else if (entry.error.isEmpty() && entry.summary.bits_per_byte) {
    bitsPerByte_ = *entry.summary.bits_per_byte;
  }
  if (bitsPerByte_ >= 0) {
    lines << tr("Final validation: <b>%1 bits/byte</b> (lower is better; 8 means it learnt nothing).")
                 .arg(locale.toString(bitsPerByte_, 'f', 3));
  }
  if (!entry.error.isEmpty()) {
    lines << tr("Its card cannot be read: %1").arg(entry.error.toHtmlEscaped());
  } else {
    const auto& s = entry.summary;
    lines << summary_line(s).toHtmlEscaped();
    if (s.steps_planned > 0 && s.steps_trained < s.steps_planned) {
      lines << tr("It stopped at step %1 of %2; the wizard offers to resume it the next time it opens.")
                   .arg(locale.toString(static_cast<qint64>(s.steps_trained)),
                        locale.toString(static_cast<qint64>(s.steps_planned)));
    } else {
      lines << tr("Trained %1 steps.").arg(locale.toString(static_cast<qint64>(s.steps_trained)));
    }
  }
  lines << tr("It is listed with your models. Press Finish to open it in the %1 tab.").arg(kind);
  text_->setText(lines.join(QStringLiteral("<br><br>")));
}

}  // namespace stx::studio
