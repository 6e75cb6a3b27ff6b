// The subcommands of stx-bench, each adding itself, its options and its run callback to `parent`.
#pragma once

namespace CLI {
class App;
}

namespace stx::bench {

// stx-bench attention: the stx CPU kernels against LibTorch dense causal attention, same inputs, same
// process, side by side; with --device cuda, attention_cuda_bench.h's sweep.
void register_attention_command(CLI::App& parent);

// stx-bench train: the time of one training step (forward, backward, AdamW) of the same small Sparse
// Transformer with dense, fixed and strided attention, side by side in one run, like the paper's Table 2.
void register_train_command(CLI::App& parent);

// stx-bench sample: tokens/s of incremental decoding for small image, text and audio models at several
// positions, the preset pattern against dense.
void register_sample_command(CLI::App& parent);

// stx-bench quality: a model's bits/byte on its held-out data beside the classical lossless compressors on
// the same bytes, written as a markdown table and JSON; with --samples, tonality_bench.h's measures.
void register_quality_command(CLI::App& parent);

}  // namespace stx::bench
