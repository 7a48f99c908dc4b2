// --attention-backend (Megatron's flag, kiln's meaning): which attention
// core the step graphs use. The fused core is one ATTENTION node (and
// ATTENTION_GRAD in the backward) that a backend with the kernel runs
// without storing the [T, T] probabilities; the unfused chain is MATMUL,
// CAUSAL_SOFTMAX (ALiBi, document masks, dropout), MATMUL. Both compute
// softmax(QK^T / sqrt(d)) V; a backend without the kernel would run the
// fused core as its decomposition, which recomputes the probabilities in
// the backward, so the chain is what it gets.
//  - flash and fused: the fused core where the backend lists ATTENTION
//    (ATTENTION_DROPOUT with --attention-dropout) and the model's attention
//    is the causal one; they say so when it is not (as Transformer Engine
//    falls back, kiln trains on).
//  - auto (the default): the same, on devices that are not CPUs. On a CPU
//    device the [T, T] probabilities fit host memory and the chain's GEMMs
//    are as fast or faster: the default model's step on PoCL takes 1.4x
//    longer fused, on lavapipe within 10% either way (docs/VULKAN.md).
//  - unfused and local: the chain.
// `kiln train` and `kiln precompile` both choose with choose_attention(),
// so the graphs they build are the same.
#pragma once
#include <string>

#include "core/backend.h"
#include "trainer/model/gpt.h"

namespace kiln::trainer {

enum class AttentionBackend { Auto, Flash, Fused, Unfused, Local };

const char* to_string(AttentionBackend b);
// Throws kiln::Error naming the flag and its choices.
AttentionBackend parse_attention_backend(const std::string& s);

struct AttentionChoice {
  bool fused = false;
  std::string line;   // "attention: ..." for the run's log: which core, and why
  bool warn = false;  // a fused core was asked for and is not what runs
};

// The core for `model` on `device`, which runs the step graphs.
AttentionChoice choose_attention(AttentionBackend asked, const GptConfig& model, const Device& device);

}  // namespace kiln::trainer
