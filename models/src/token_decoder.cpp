// make_decoder: the network's decoder for a device, wrapped in the decoders of the model's history inputs.
#include "stx/models/token_decoder.h"

#include <stdexcept>
#include <string>

#include "stx/models/amplitude_decoder.h"
#include "stx/models/cpu_decoder.h"
#include "stx/models/expert_decoder.h"
#include "stx/models/torch_decoder.h"

namespace stx::models {

void ProbedHead::choose(const ModelConfig& config, int layer, int head) {
  if (layer < 0) {
    this->layer = -1;
    return;
  }
  if (layer >= config.layers || head < 0 || head >= config.heads) {
    throw std::out_of_range("decoder: no layer " + std::to_string(layer) + " head " + std::to_string(head) +
                            " (the model has " + std::to_string(config.layers) + " layers of " +
                            std::to_string(config.heads) + " heads)");
  }
  this->layer = layer;
  this->head = head;
}

std::unique_ptr<TokenDecoder> with_history_inputs(SparseTransformer& model, std::unique_ptr<TokenDecoder> network) {
  // The expert outermost: its rows reach the network through the amplitude decoder, which adds its own.
  if (model->config().amplitude_taps > 0) network = std::make_unique<AmplitudeDecoder>(model, std::move(network));
  if (model->config().expert.enabled()) network = std::make_unique<ExpertDecoder>(model, std::move(network));
  return network;
}

std::unique_ptr<TokenDecoder> make_decoder(SparseTransformer& model, int64_t batch, int64_t capacity,
                                           kernels::DType cache_dtype, const at::Device& device) {
  std::unique_ptr<TokenDecoder> network;
  if (device.is_cpu()) {
    network = std::make_unique<IncrementalDecoder>(model, batch, capacity, cache_dtype);
  } else {
    network = std::make_unique<TorchDecoder>(model, batch, capacity, cache_dtype, device);
  }
  return with_history_inputs(model, std::move(network));
}

}  // namespace stx::models
