#pragma once

namespace CLI {
class App;
}

namespace stx::bench {

// `stx-bench sample`: tokens/s of incremental decoding for small image, text and audio models at several
// positions, the preset pattern against dense.
void register_sample_command(CLI::App& parent);

}  // namespace stx::bench
