// stx-bench train: the time of one training step (forward, backward, AdamW) of the same small Sparse
// Transformer with dense, fixed and strided attention, side by side in one run, like the paper's Table 2.
#pragma once

namespace CLI {
class App;
}

namespace stx::bench {

void register_train_command(CLI::App& parent);

}  // namespace stx::bench
