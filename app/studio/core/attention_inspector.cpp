#include "core/attention_inspector.h"

#include <algorithm>
#include <map>

#include "core/engine_host.h"

namespace stx::studio {

bool AttentionInspector::Request::sameQuestion(const Request& other) const {
  return sample == other.sample && layer == other.layer && head == other.head && position == other.position &&
         bytes == other.bytes;
}

AttentionInspector::AttentionInspector(EngineHost* host, QObject* parent) : QObject(parent), host_(host) {
  connect(host_->worker(), &EngineWorker::inspected, this, &AttentionInspector::partArrived);
  connect(host_->worker(), &EngineWorker::jobFinished, this, &AttentionInspector::jobEnded);
}

void AttentionInspector::request(int sample, const Bytes& bytes, int layer, int head, int heads,
                                 qint64 position) {
  Request request{sample, bytes, layer, head, std::max(1, heads), position};
  if (running_ && !discard_ && running_->sameQuestion(request)) {
    waiting_.reset();  // the mouse came back to the pixel being inspected
    return;
  }
  if (outstanding_ > 0) {
    waiting_ = std::move(request);
    return;
  }
  start(request);
}

void AttentionInspector::cancel() {
  waiting_.reset();
  if (outstanding_ > 0) discard_ = true;
}

void AttentionInspector::start(const Request& request) {
  running_ = request;
  parts_.clear();
  failed_ = false;
  discard_ = false;
  if (request.head >= 0) {
    outstanding_ = 1;
    host_->inspect(request.bytes, request.layer, request.head, request.position);
  } else {
    outstanding_ = request.heads;
    for (int head = 0; head < request.heads; ++head) {
      host_->inspect(request.bytes, request.layer, head, request.position);
    }
  }
}

void AttentionInspector::partArrived(const stx::engine::AttentionProbe& probe) {
  if (outstanding_ > 0) parts_.push_back(probe);
}

void AttentionInspector::jobEnded(EngineJob job, bool ok) {
  if (job != EngineJob::inspect || outstanding_ == 0) return;
  failed_ = failed_ || !ok;
  if (--outstanding_ > 0) return;
  if (!discard_ && !failed_ && running_ && !parts_.empty()) {
    stx::engine::AttentionProbe result;
    result.sample = running_->sample;
    result.layer = running_->layer;
    result.head = running_->head;
    result.position = running_->position;
    if (parts_.size() == 1) {
      result.positions = parts_.front().positions;
      result.weights = parts_.front().weights;
    } else {
      // Heads may read different positions (multihead mode); a position a head does not read counts 0.
      std::map<int64_t, double> sum;
      for (const stx::engine::AttentionProbe& part : parts_) {
        for (size_t i = 0; i < part.positions.size() && i < part.weights.size(); ++i) {
          sum[part.positions[i]] += part.weights[i];
        }
      }
      for (const auto& [position, weight] : sum) {
        result.positions.push_back(position);
        result.weights.push_back(static_cast<float>(weight / static_cast<double>(parts_.size())));
      }
    }
    emit ready(result);
  }
  running_.reset();
  parts_.clear();
  if (waiting_) {
    const Request next = std::move(*waiting_);
    waiting_.reset();
    start(next);
  }
}

}  // namespace stx::studio
