#include "text/text_attention_inspector.h"

#include <map>

#include "core/engine_host.h"

namespace stx::studio {

TextAttentionInspector::TextAttentionInspector(EngineHost* host, QObject* parent) : QObject(parent), host_(host) {
  connect(host_->worker(), &EngineWorker::inspected, this, &TextAttentionInspector::onProbe);
  connect(host_->worker(), &EngineWorker::failed, this, [this](EngineJob job, const QString&) {
    if (job == EngineJob::inspect) onFailed(job);
  });
}

void TextAttentionInspector::request(const Request& request) {
  wanted_ = request;
  if (!running_) startNext();
}

void TextAttentionInspector::cancel() {
  wanted_.reset();
  if (running_) {
    // The engine answers every queued job in order; the answers still due for this request are ignored.
    staleDue_ = answersDue_;
    running_.reset();
    answers_.clear();
  }
}

void TextAttentionInspector::startNext() {
  // No need to wait for stale answers: the engine answers in order, so they all come before the new ones.
  if (!wanted_ || running_) return;
  running_ = std::move(wanted_);
  wanted_.reset();
  answers_.clear();
  const Request& r = *running_;
  const int first = r.head == kAllHeads ? 0 : r.head;
  const int last = r.head == kAllHeads ? r.heads - 1 : r.head;
  for (int head = first; head <= last; ++head) {
    host_->inspect(r.bytes, r.layer, head, r.position);
    ++answersDue_;
  }
}

void TextAttentionInspector::onFailed(EngineJob) {
  if (answersDue_ > 0) --answersDue_;
  if (staleDue_ > 0) {
    --staleDue_;
  } else if (running_) {
    // One head failed (the tab shows why): the request is dropped rather than shown incomplete.
    staleDue_ = answersDue_;
    running_.reset();
    answers_.clear();
  }
  startNext();
}

void TextAttentionInspector::onProbe(const stx::engine::AttentionProbe& probe) {
  if (answersDue_ > 0) --answersDue_;
  if (staleDue_ > 0) {
    --staleDue_;
    startNext();
    return;
  }
  if (!running_) return;
  answers_.push_back(probe);
  const Request& r = *running_;
  const size_t expected = r.head == kAllHeads ? static_cast<size_t>(r.heads) : 1;
  if (answers_.size() < expected) return;
  // The average over heads: each head's weights sum to 1, so dividing the sum by the head count keeps
  // the total at 1 over the union of the positions any head read.
  std::map<int64_t, double> weights;
  for (const stx::engine::AttentionProbe& answer : answers_) {
    for (size_t i = 0; i < answer.positions.size() && i < answer.weights.size(); ++i) {
      weights[answer.positions[i]] += answer.weights[i];
    }
  }
  TextView::Attention attention;
  attention.position = r.position;
  for (const auto& [position, weight] : weights) {
    attention.positions.push_back(position);
    attention.weights.push_back(static_cast<float>(weight / static_cast<double>(answers_.size())));
  }
  const Request done = r;
  running_.reset();
  answers_.clear();
  emit inspected(done.sample, done.layer, done.head, attention);
  startNext();
}

}  // namespace stx::studio
