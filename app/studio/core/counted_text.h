// "1 sample" / "12 samples": English counts without a translation file (tr()'s %n plurals need one loaded,
// and without it print "sample(s)").
#pragma once

#include <QLocale>
#include <QString>

namespace stx::studio {

// `one` when n is 1, else `many` with its %1 set to n, written in the user's locale.
inline QString counted(qint64 n, const QString& one, const QString& many) {
  return n == 1 ? one : many.arg(QLocale().toString(n));
}

}  // namespace stx::studio
