// --log-throughput's FLOP count (trainer/report/model_flops.h) against
// Megatron-LM's num_floating_point_operations() evaluated in Python for the
// same models (its dense-transformer branch, transcribed term by term).
#include <gtest/gtest.h>

#include "trainer/model/gpt.h"
#include "trainer/report/model_flops.h"

using kiln::trainer::GptConfig;
using kiln::trainer::megatron_iteration_flops;

TEST(ModelFlops, Llama3_8BAsMegatronCountsIt) {
  GptConfig m;  // examples/llama/train_llama3_8b_h100_fp8.sh, global batch 128
  m.num_layers = 32;
  m.hidden_size = 4096;
  m.ffn_hidden_size = 14336;
  m.num_attention_heads = 32;
  m.num_query_groups = 8;
  m.kv_channels = 128;
  m.seq_length = 8192;
  m.vocab_size = 128256;
  m.swiglu = true;
  EXPECT_DOUBLE_EQ(megatron_iteration_flops(m, 128), 5.397062776101274e+16);
  // 1 s per iteration on 8 GPUs.
  EXPECT_DOUBLE_EQ(kiln::trainer::megatron_tflops_per_gpu(5.397062776101274e+16, 1.0, 8), 5.397062776101274e+16 / 8e12);
}

TEST(ModelFlops, TinyGqaSwigluAndPlainGpt) {
  GptConfig gqa;  // the cli test's shrunk llama3 (NullTokenizer's padded vocab)
  gqa.num_layers = 2;
  gqa.hidden_size = 64;
  gqa.ffn_hidden_size = 224;
  gqa.num_attention_heads = 4;
  gqa.num_query_groups = 2;
  gqa.kv_channels = 16;
  gqa.seq_length = 32;
  gqa.vocab_size = 128384;
  gqa.swiglu = true;
  EXPECT_DOUBLE_EQ(megatron_iteration_flops(gqa, 2), 3199205376.0);
  GptConfig gpt;  // multi-head attention (no groups), GELU MLP of the default 4h
  gpt.num_layers = 2;
  gpt.hidden_size = 64;
  gpt.num_attention_heads = 4;
  gpt.seq_length = 64;
  gpt.vocab_size = 256;
  EXPECT_DOUBLE_EQ(megatron_iteration_flops(gpt, 8), 377487360.0);
}
