// stx-bench quality: a model's bits/byte on its held-out data beside the classical lossless compressors on the
// same bytes, written as a markdown table and JSON.
#pragma once

namespace CLI {
class App;
}

namespace stx::bench {

void register_quality_command(CLI::App& parent);

}  // namespace stx::bench
