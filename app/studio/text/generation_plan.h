// How a Text-tab request fits in the model's context: the prompt plus the bytes to generate may not exceed
// it. The tab shows the plan as a note before Generate is pressed, so that a cap is never a surprise.
#pragma once

#include <QCoreApplication>
#include <QString>
#include <string>

#include "core/engine_types.h"

namespace stx::studio {

class GenerationPlan {
  Q_DECLARE_TR_FUNCTIONS(GenerationPlan)

 public:
  // `wanted` bytes after `prompt` with a model of `context` bytes.
  static GenerationPlan fit(const Bytes& prompt, qint64 wanted, qint64 context);

  qint64 wanted = 0, context = 0;
  qint64 dropped =
      0;            // the prompt's first bytes left out (only when the prompt alone would fill the context)
  qint64 kept = 0;  // prompt bytes the model reads
  qint64 generate = 0;  // bytes to generate after them

  // One line for the user: how much fits, or why less than asked is generated.
  QString note() const;

  // The stop-string field as bytes: "\n", "\t" and "\\" stand for a newline, a tab and a backslash.
  static std::string stopString(const QString& typed);
};

}  // namespace stx::studio
