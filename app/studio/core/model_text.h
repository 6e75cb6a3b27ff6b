// Model facts as the studio writes them, so that every tab and card says them the same way.
#pragma once

#include <QString>

#include "stx/engine/model_session.h"

namespace stx::studio {

// "2.1M", "940k", "512".
QString format_count(qint64 n);
// "strided l=128", "fixed l=128 c=32", "dense".
QString pattern_text(const stx::engine::ModelSummary& s);
// "text · fixed l=128 c=32 · context 1,024 · 2.1M parameters · 1.85 bits/byte"
QString summary_line(const stx::engine::ModelSummary& s);

}  // namespace stx::studio
