// stx-bench attention: the stx CPU kernels against LibTorch dense causal attention, same inputs,
// same process, side by side.
#pragma once

namespace CLI {
class App;
}

namespace stx::bench {

// Adds the `attention` subcommand, its options and its run callback to `parent`.
void register_attention_command(CLI::App& parent);

}  // namespace stx::bench
