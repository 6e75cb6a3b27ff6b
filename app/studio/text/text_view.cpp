#include "text/text_view.h"

#include <QAbstractTextDocumentLayout>
#include <QFontDatabase>
#include <QMouseEvent>
#include <QScrollBar>
#include <QTextBlock>
#include <QTextCursor>
#include <QTextLayout>
#include <algorithm>
#include <map>

namespace stx::studio {

namespace {

bool is_dark(const QPalette& palette) { return palette.color(QPalette::Base).lightness() < 128; }

const ByteText& empty_text() {
  static const ByteText empty;
  return empty;
}

}  // namespace

TextView::TextView(QWidget* parent) : QTextEdit(parent) {
  setReadOnly(true);
  setUndoRedoEnabled(false);  // the document is rebuilt by code; an undo stack would only grow
  setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
  setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
  setPlaceholderText(
      tr("The continuation appears here as it is generated, in colour after the prompt.\n"
         "Afterwards, hover over a character to see what it attended; click to keep it."));
  viewport()->setMouseTracking(true);
  frame_.setSingleShot(true);
  frame_.setInterval(33);
  connect(&frame_, &QTimer::timeout, this, &TextView::refresh);
  updateFormats();
}

void TextView::startRun(int count, const Bytes& prompt) {
  samples_.assign(static_cast<size_t>(std::max(count, 0)), ByteText());
  const std::string_view promptView(reinterpret_cast<const char*>(prompt.data()), prompt.size());
  for (ByteText& sample : samples_) sample.append(promptView);
  attention_.assign(samples_.size(), Attention());
  prompt_ = static_cast<qint64>(prompt.size());
  current_ = std::clamp(current_, 0, std::max(count - 1, 0));
  rebuild_ = true;
  refreshNow();  // the prompt shows at once; the continuation follows frame by frame
}

void TextView::appendBytes(int sample, qint64 position, std::string_view bytes) {
  if (sample < 0 || sample >= sampleCount()) return;
  samples_[static_cast<size_t>(sample)].write(position, bytes);
  if (sample == current_) scheduleRefresh();
}

void TextView::finishRun(const std::vector<Bytes>& samples) {
  if (samples.size() != samples_.size()) {
    samples_.resize(samples.size());
    attention_.resize(samples.size());
    current_ = std::clamp(current_, 0, std::max(sampleCount() - 1, 0));
    rebuild_ = true;
  }
  for (size_t k = 0; k < samples.size(); ++k) {
    ByteText& text = samples_[k];
    const Bytes& final = samples[k];
    const Bytes& shown = text.bytes();
    // Usually what streamed is a prefix of the result; write only from where they differ.
    const auto differ = std::mismatch(shown.begin(), shown.end(), final.begin(), final.end());
    const auto from = static_cast<qint64>(differ.second - final.begin());
    if (differ.first != shown.end() || differ.second != final.end()) {
      text.write(from, std::string_view(reinterpret_cast<const char*>(final.data()) + from,
                                        final.size() - static_cast<size_t>(from)));
    }
    text.setComplete(true);
  }
  refreshNow();
}

void TextView::setCurrentSample(int sample) {
  if (sample < 0 || sample >= sampleCount() || sample == current_) return;
  current_ = sample;
  rebuild_ = true;
  refreshNow();
}

const Bytes& TextView::sampleBytes(int sample) const {
  if (sample < 0 || sample >= sampleCount()) return empty_text().bytes();
  return samples_[static_cast<size_t>(sample)].bytes();
}

const ByteText& TextView::shownText() const {
  return samples_.empty() ? empty_text() : samples_[static_cast<size_t>(current_)];
}

void TextView::setAttention(int sample, const Attention& attention) {
  if (sample < 0 || sample >= sampleCount()) return;
  attention_[static_cast<size_t>(sample)] = attention;
  if (sample == current_) scheduleRefresh();
}

void TextView::clearAttention() {
  for (Attention& a : attention_) a = Attention();
  scheduleRefresh();
}

const TextView::Attention& TextView::attention(int sample) const {
  static const Attention none;
  if (sample < 0 || sample >= sampleCount()) return none;
  return attention_[static_cast<size_t>(sample)];
}

QPair<int, int> TextView::charRange(qint64 position) const {
  const ByteText& text = shownText();
  const int unit = text.unitOfByte(position);
  if (unit < 0 || unit >= shownUnits_) return {-1, 0};
  const ByteText::Unit& u = text.units()[static_cast<size_t>(unit)];
  return {u.charStart, u.charCount};
}

qint64 TextView::byteAtChar(int charPosition) const {
  const ByteText& text = shownText();
  const int unit = text.unitAtChar(charPosition);
  if (unit < 0 || unit >= shownUnits_) return -1;
  return text.units()[static_cast<size_t>(unit)].byte;
}

qint64 TextView::byteAt(const QPoint& viewportPoint) const {
  // Document coordinates, as QTextEdit maps them: the viewport point plus the scroll offsets.
  const QPointF point =
      QPointF(viewportPoint) + QPointF(horizontalScrollBar()->value(), verticalScrollBar()->value());
  QAbstractTextDocumentLayout* layout = document()->documentLayout();
  const int near = layout->hitTest(point, Qt::FuzzyHit);
  if (near < 0) return -1;
  const QTextBlock block = document()->findBlock(near);
  const QTextLayout* blockLayout = block.layout();
  if (!block.isValid() || !blockLayout) return -1;
  const QPointF local = point - layout->blockBoundingRect(block).topLeft();
  for (int i = 0; i < blockLayout->lineCount(); ++i) {
    const QTextLine line = blockLayout->lineAt(i);
    if (local.y() < line.y() || local.y() >= line.y() + line.height()) continue;
    // Empty space right of a line is no character: hovering there inspects nothing.
    if (local.x() < line.x() || local.x() > line.x() + line.naturalTextWidth()) return -1;
    const int inBlock = line.xToCursor(local.x(), QTextLine::CursorOnCharacter);
    return byteAtChar(block.position() + inBlock);
  }
  return -1;
}

QString TextView::describeByte(qint64 position) const {
  const Bytes& bytes = shownText().bytes();
  if (position < 0 || position >= static_cast<qint64>(bytes.size())) return {};
  const uint8_t byte = bytes[static_cast<size_t>(position)];
  if (byte == '\n') return QStringLiteral("'\\n'");
  if (byte == '\t') return QStringLiteral("'\\t'");
  if (byte == '\r') return QStringLiteral("'\\r'");
  const QString hex =
      QStringLiteral("0x") + QString::number(byte, 16).rightJustified(2, QLatin1Char('0')).toUpper();
  const int unit = shownText().unitOfByte(position);
  if (unit < 0) return hex;
  const ByteText::Unit& u = shownText().units()[static_cast<size_t>(unit)];
  const QString shown = shownText().text().mid(u.charStart, u.charCount);
  // A replacement character hides which byte it stands for; the hex value does not.
  if (shown == QString(QChar::ReplacementCharacter) || byte < 0x20 || byte == 0x7F) return hex;
  return QStringLiteral("'%1'").arg(shown);
}

QColor TextView::accentColor() const {
  return is_dark(palette()) ? QColor(0x6C, 0xB6, 0xFF) : QColor(0x00, 0x5A, 0xC2);
}

QColor TextView::attentionColor() const {
  return is_dark(palette()) ? QColor(0xFF, 0xA6, 0x3C) : QColor(0xFF, 0x8C, 0x00);
}

QColor TextView::currentColor() const {
  return is_dark(palette()) ? QColor(0xF0, 0x5A, 0xA0) : QColor(0xD0, 0x1E, 0x78);
}

void TextView::refreshNow() {
  frame_.stop();
  refresh();
}

void TextView::mouseMoveEvent(QMouseEvent* event) {
  QTextEdit::mouseMoveEvent(event);
  if (event->buttons() != Qt::NoButton) return;  // selecting text, not inspecting
  const qint64 byte = byteAt(event->position().toPoint());
  if (byte >= 0 && byte != hovered_) {
    hovered_ = byte;
    emit byteHovered(byte);
  }
}

void TextView::mousePressEvent(QMouseEvent* event) {
  QTextEdit::mousePressEvent(event);
  pressed_ = event->button() == Qt::LeftButton ? byteAt(event->position().toPoint()) : -1;
}

void TextView::mouseReleaseEvent(QMouseEvent* event) {
  QTextEdit::mouseReleaseEvent(event);
  // A click, not the end of a text selection.
  if (event->button() == Qt::LeftButton && pressed_ >= 0 && !textCursor().hasSelection() &&
      byteAt(event->position().toPoint()) == pressed_) {
    emit byteClicked(pressed_);
  }
  pressed_ = -1;
}

void TextView::changeEvent(QEvent* event) {
  QTextEdit::changeEvent(event);
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::StyleChange) {
    updateFormats();
    rebuild_ = true;
    scheduleRefresh();
  }
}

void TextView::scheduleRefresh() {
  if (!frame_.isActive()) frame_.start();
}

void TextView::refresh() {
  const ByteText& text = shownText();
  if (rebuild_ || (!samples_.empty() && text.rewound())) {
    clear();
    shownUnits_ = 0;
    rebuild_ = false;
    if (!samples_.empty()) samples_[static_cast<size_t>(current_)].clearRewound();
  }
  appendNewUnits();
  updateHighlights();
}

void TextView::appendNewUnits() {
  const ByteText& text = shownText();
  const auto& units = text.units();
  const int total = static_cast<int>(units.size());
  if (shownUnits_ >= total) return;
  QScrollBar* scroll = verticalScrollBar();
  const bool followEnd = scroll->value() >= scroll->maximum() - 4;
  QTextCursor cursor(document());
  cursor.movePosition(QTextCursor::End);
  cursor.beginEditBlock();
  // Two runs at most: the rest of the prompt, then the continuation.
  while (shownUnits_ < total) {
    const bool generated = units[static_cast<size_t>(shownUnits_)].byte >= prompt_;
    int end = shownUnits_;
    while (end < total && (units[static_cast<size_t>(end)].byte >= prompt_) == generated) ++end;
    const int from = units[static_cast<size_t>(shownUnits_)].charStart;
    const auto& last = units[static_cast<size_t>(end - 1)];
    cursor.insertText(text.text().mid(from, last.charStart + last.charCount - from),
                      generated ? generatedFormat_ : promptFormat_);
    shownUnits_ = end;
  }
  cursor.endEditBlock();
  if (followEnd) scroll->setValue(scroll->maximum());
}

void TextView::updateHighlights() {
  QList<QTextEdit::ExtraSelection> selections;
  const Attention& a = attention(current_);
  if (a.position >= 0) {
    // Several bytes of one character share its highlight: their weights add up.
    const ByteText& text = shownText();
    std::map<int, double> unitWeight;
    for (size_t i = 0; i < a.positions.size(); ++i) {
      const int unit = text.unitOfByte(a.positions[i]);
      if (unit >= 0 && unit < shownUnits_) unitWeight[unit] += i < a.weights.size() ? a.weights[i] : 0.0;
    }
    double strongest = 0;
    for (const auto& [unit, weight] : unitWeight) strongest = std::max(strongest, weight);
    const QColor base = attentionColor();
    for (const auto& [unit, weight] : unitWeight) {
      const ByteText::Unit& u = text.units()[static_cast<size_t>(unit)];
      if (u.charCount == 0) continue;
      QTextEdit::ExtraSelection s;
      s.cursor = QTextCursor(document());
      s.cursor.setPosition(u.charStart);
      s.cursor.setPosition(u.charStart + u.charCount, QTextCursor::KeepAnchor);
      QColor fill = base;
      // Scaled to the strongest weight: with dozens of positions even the largest weight is small, and an
      // attended character must stay visible however little it got.
      fill.setAlphaF(static_cast<float>(0.15 + 0.75 * (strongest > 0 ? weight / strongest : 0.0)));
      s.format.setBackground(fill);
      s.format.setProperty(kWeightProperty, weight);
      selections << s;
    }
    const int current = text.unitOfByte(a.position);
    if (current >= 0 && current < shownUnits_ && text.units()[static_cast<size_t>(current)].charCount > 0) {
      const ByteText::Unit& u = text.units()[static_cast<size_t>(current)];
      QTextEdit::ExtraSelection s;
      s.cursor = QTextCursor(document());
      s.cursor.setPosition(u.charStart);
      s.cursor.setPosition(u.charStart + u.charCount, QTextCursor::KeepAnchor);
      QColor fill = currentColor();
      fill.setAlphaF(0.55f);
      s.format.setBackground(fill);
      s.format.setFontUnderline(true);
      s.format.setUnderlineColor(currentColor());
      s.format.setProperty(kCurrentProperty, true);
      selections << s;
    }
  }
  setExtraSelections(selections);
}

void TextView::updateFormats() {
  promptFormat_ = QTextCharFormat();
  promptFormat_.setForeground(palette().brush(QPalette::Text));
  generatedFormat_ = QTextCharFormat();
  generatedFormat_.setForeground(accentColor());
}

}  // namespace stx::studio
