#include "trainer/report/model_flops.h"

namespace kiln::trainer {

double megatron_iteration_flops(const GptConfig& m, int64_t batch_size) {
  // Each GEMM runs 3 times (forward, wgrad, dgrad) at 2 FLOPs per
  // multiply-add; SwiGLU's fc1 holds two matrices (3 GEMMs with fc2, else 2).
  const double passes = 3, fma = 2, ffn_factor = m.swiglu ? 3 : 2;
  const double h = static_cast<double>(m.hidden_size), s = static_cast<double>(m.seq_length);
  const double heads = static_cast<double>(m.num_attention_heads);
  const double groups = m.num_query_groups > 0 ? static_cast<double>(m.num_query_groups) : heads;
  const double kv = static_cast<double>(m.head_dim());
  const double query = kv * heads, key = kv * groups, value = kv * groups;
  // QKV projection, QK^T and (QK^T)V over half the causal mask, out projection.
  const double attention = passes * fma * (h * (query + key + value) + query * s / 2 * 2 + query * h);
  const double layers = static_cast<double>(m.num_layers);
  const double mlp = passes * fma * h * (static_cast<double>(m.ffn_hidden()) * ffn_factor) * layers;
  const double logits = passes * fma * h * static_cast<double>(m.vocab_size);
  return static_cast<double>(batch_size) * s * (mlp + attention * layers + logits);
}

double megatron_tflops_per_gpu(double iteration_flops, double seconds_per_iteration, int64_t world_size) {
  return iteration_flops / (seconds_per_iteration * 1e12 * static_cast<double>(world_size));
}

}  // namespace kiln::trainer
