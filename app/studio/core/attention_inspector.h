// Asks the engine what a head attended for one byte of a finished sample, as the mouse moves over it. Only
// one inspection runs at a time and only the newest waiting one is kept, so a fast-moving mouse never
// queues up work. "All heads" inspects every head and averages their weights per position.
#pragma once

#include <QObject>
#include <optional>
#include <vector>

#include "core/engine_types.h"

namespace stx::studio {

class EngineHost;

class AttentionInspector : public QObject {
  Q_OBJECT

 public:
  explicit AttentionInspector(EngineHost* host, QObject* parent = nullptr);

  // head < 0: every one of `heads` heads, averaged. `sample` only travels back with the result.
  void request(int sample, const Bytes& bytes, int layer, int head, int heads, qint64 position);
  // Drops the waiting request and ignores the running one's result (the samples or the model changed).
  void cancel();
  bool idle() const { return outstanding_ == 0; }

 signals:
  // probe.head is -1 for "all heads"; probe.sample is the sample asked about.
  void ready(const stx::engine::AttentionProbe& probe);

 private:
  struct Request {
    int sample = 0;
    Bytes bytes;
    int layer = 0, head = 0, heads = 1;
    qint64 position = 0;
    bool sameQuestion(const Request& other) const;
  };
  void start(const Request& request);
  void partArrived(const stx::engine::AttentionProbe& probe);
  void jobEnded(EngineJob job, bool ok);

  EngineHost* host_;
  std::optional<Request> running_, waiting_;
  int outstanding_ = 0;  // inspect jobs of the running request not finished yet
  bool failed_ = false, discard_ = false;
  std::vector<stx::engine::AttentionProbe> parts_;
};

}  // namespace stx::studio
