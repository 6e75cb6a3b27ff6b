// Asks the engine what a head attended at one position of a finished sample, one question at a time.
// Inspecting runs the model over the sample again, and hovering asks many times a second: only one request
// is in flight, and the latest wish waits, replacing older ones. "All heads" inspects each head of the layer
// and averages them (weights still sum to 1 over the union of their positions).
#pragma once

#include <QObject>
#include <optional>
#include <vector>

#include "core/engine_types.h"
#include "text/text_view.h"

namespace stx::studio {

class EngineHost;

class TextAttentionInspector : public QObject {
  Q_OBJECT

 public:
  static constexpr int kAllHeads = -1;

  struct Request {
    int sample = 0;
    Bytes bytes;  // the sample
    int layer = 0;
    int head = 0;   // or kAllHeads
    int heads = 1;  // how many the layer has
    qint64 position = 0;
  };

  explicit TextAttentionInspector(EngineHost* host, QObject* parent = nullptr);

  void request(const Request& request);
  // Forgets the waiting wish and drops answers still on their way (a new generation starts).
  void cancel();
  bool idle() const { return !running_ && !wanted_; }

 signals:
  // What `request.head` (or all heads, averaged) of `layer` attended at `attention.position` of `sample`.
  void inspected(int sample, int layer, int head, const stx::studio::TextView::Attention& attention);

 private:
  void startNext();
  void onProbe(const stx::engine::AttentionProbe& probe);
  void onFailed(EngineJob job);

  EngineHost* host_;
  std::optional<Request> wanted_;   // asked for, not started yet
  std::optional<Request> running_;  // started: its heads' answers are being gathered
  std::vector<stx::engine::AttentionProbe> answers_;
  int answersDue_ = 0;  // inspect jobs queued on the engine and not answered yet (stale ones included)
  int staleDue_ = 0;    // of those, how many belong to a cancelled request
};

}  // namespace stx::studio
