// The tiny models the torch-based suites build, train and sample in seconds on a CPU: one definition, so
// that a change to ModelConfig is made once for every suite.
#pragma once

#include <string>

#include "stx/kernels/pattern.h"
#include "stx/models/model_config.h"

namespace stx::test {

// 2 layers, 2 heads, d_model 32, d_ff 64, blocks of 16, named "tiny-<kind>":
//   text   a context of 64, the fixed pattern with l = 16, c = 4
//   image  8 x 8 gray (a context of 64), strided with l = 8, one image row
//   audio  a context of 256, strided with l = 16
// A suite changes what its test is about (context, pattern, precision) on the copy it gets.
inline models::ModelConfig tiny_model_config(models::DataKind kind) {
  models::ModelConfig c;
  c.name = std::string("tiny-") + models::to_string(kind);
  c.kind = kind;
  c.d_model = 32;
  c.layers = 2;
  c.heads = 2;
  c.d_ff = 64;
  c.block = 16;
  c.pattern = kernels::Pattern::strided;
  switch (kind) {
    case models::DataKind::image:
      c.image_height = 8;
      c.image_width = 8;
      c.image_channels = 1;
      c.context = 64;
      c.stride = 8;
      break;
    case models::DataKind::audio:
      c.context = 256;
      c.stride = 16;
      break;
    case models::DataKind::text:
      c.context = 64;
      c.pattern = kernels::Pattern::fixed;
      c.stride = 16;
      c.summary = 4;
      break;
  }
  return c;
}

}  // namespace stx::test
