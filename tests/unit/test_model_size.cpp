// Architecture sizes bounded before anything is built (trainer/model/model_size.h).
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "trainer/model/gpt.h"
#include "trainer/model/model_size.h"

using kiln::trainer::GptConfig;

namespace {

std::string validate_error(const GptConfig& c) {
  try {
    c.validate();
  } catch (const kiln::Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// N30: --num-layers 1000000000 (or n_layer in a config.json) used to build
// 12e9 parameter names until the OOM killer; now validate() refuses it from
// the sizes alone, naming the flag.
TEST(ModelSize, BillionLayersRefusedByValidate) {
  GptConfig c;
  c.num_layers = 1000000000;
  const std::string e = validate_error(c);
  EXPECT_NE(e.find("--num-layers 1000000000"), std::string::npos) << e;
  EXPECT_NE(e.find("lower --num-layers"), std::string::npos) << e;
}

// N30: a layer number the compile units cannot label (2^30 and above).
TEST(ModelSize, LayersBeyondTheUnitLabelsRefused) {
  GptConfig c;
  c.num_layers = int64_t{1} << 40;
  EXPECT_NE(validate_error(c).find("layers kiln's graphs can number"), std::string::npos) << validate_error(c);
}

// F9: --hidden-size 1048576 used to fail late in the plugin ("cpu: compile
// failed: IR value too large"); the QKV weight is 3 x 2^40 elements.
TEST(ModelSize, TensorAboveTheIrLimitNamesTheFlag) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 1048576;
  const std::string e = validate_error(c);
  EXPECT_NE(e.find("above kiln's 2^40 per tensor"), std::string::npos) << e;
  EXPECT_NE(e.find("--hidden-size 1048576"), std::string::npos) << e;
}

// N30: the weights check, for commands that hold the weights: 8e14
// parameters (3 PB of fp32 weights) fit no host; the default model does.
TEST(ModelSize, WeightsCheckedAgainstHostMemory) {
  GptConfig c;
  c.num_layers = 1000;
  c.hidden_size = 262144;
  c.num_attention_heads = 64;
  EXPECT_THROW(kiln::trainer::check_weights_fit(c, 1), kiln::Error);
  GptConfig small;
  EXPECT_NO_THROW(kiln::trainer::check_weights_fit(small, 1));
}

// The estimate is gpt_parameters()' count (biases and norms rounded up).
TEST(ModelSize, EstimateBoundsTheParameterCount) {
  GptConfig c;
  c.num_layers = 3;
  c.swiglu = true;
  c.untie_embeddings_and_output_weights = true;
  const double exact = static_cast<double>(kiln::trainer::parameter_count(c));
  EXPECT_GE(kiln::trainer::parameter_estimate(c), exact);
  EXPECT_LE(kiln::trainer::parameter_estimate(c), exact * 1.01);
}
