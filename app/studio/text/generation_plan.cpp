#include "text/generation_plan.h"

#include <QLocale>
#include <algorithm>

namespace stx::studio {

GenerationPlan GenerationPlan::fit(const Bytes& prompt, qint64 wanted, qint64 context) {
  GenerationPlan plan;
  plan.wanted = wanted;
  plan.context = context;
  const auto size = static_cast<qint64>(prompt.size());
  plan.kept = size;
  if (context < 2) return plan;
  // A prompt too long for the context keeps its end (what is continued) but at least half the context, so
  // a large "bytes to generate" never shrinks the prompt to nothing.
  if (size + std::min(wanted, context - 1) > context) {
    const qint64 keep = std::min(size, std::max(context - wanted, context / 2));
    plan.dropped = size - keep;
    // Never cut a character in two: the kept prompt starts at a UTF-8 lead byte.
    while (plan.dropped < size && (prompt[static_cast<size_t>(plan.dropped)] & 0xC0) == 0x80) ++plan.dropped;
  }
  plan.kept = size - plan.dropped;
  plan.generate = std::max<qint64>(0, std::min(wanted, context - plan.kept));
  return plan;
}

QString GenerationPlan::note() const {
  const QLocale locale;
  if (dropped > 0) {
    return tr("The model reads %1 bytes at most: only the last %2 bytes of the prompt are used, then %3 are "
              "generated.")
        .arg(locale.toString(context), locale.toString(kept), locale.toString(generate));
  }
  if (generate < wanted) {
    return tr("Capped at the model's context: %1 bytes of prompt + %2 generated = %3 bytes.")
        .arg(locale.toString(kept), locale.toString(generate), locale.toString(kept + generate));
  }
  return tr("%1 bytes of prompt + %2 = %3 of the %4-byte context.")
      .arg(locale.toString(kept), locale.toString(generate), locale.toString(kept + generate),
           locale.toString(context));
}

std::string GenerationPlan::stopString(const QString& typed) {
  std::string out;
  const QByteArray utf8 = typed.toUtf8();
  for (int i = 0; i < utf8.size(); ++i) {
    if (utf8[i] == '\\' && i + 1 < utf8.size()) {
      const char next = utf8[i + 1];
      if (next == 'n' || next == 't' || next == '\\') {
        out += next == 'n' ? '\n' : next == 't' ? '\t' : '\\';
        ++i;
        continue;
      }
    }
    out += utf8[i];
  }
  return out;
}

}  // namespace stx::studio
