#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "trainer/loss_scaler.h"
#include "trainer/model/step_graphs.h"

using kiln::trainer::LossScaleState;
using kiln::trainer::MixedPrecision;

namespace {
MixedPrecision fp16(int64_t window = 1000, int64_t hysteresis = 2) {
  MixedPrecision p;
  p.fp16 = true;
  p.loss_scale_window = window;
  p.hysteresis = hysteresis;
  return p;
}
}  // namespace

// Sequences worked by hand from Megatron's DynamicGradScaler.update().
TEST(LossScaler, HysteresisDelaysTheFirstHalving) {
  const MixedPrecision p = fp16();
  LossScaleState s = kiln::trainer::initial_loss_scale(p);
  EXPECT_EQ(s.scale, 4294967296.0);
  EXPECT_EQ(s.hysteresis_tracker, 2);
  kiln::trainer::update_loss_scale(s, p, true);  // tracker 2 -> 1: no change yet
  EXPECT_EQ(s.scale, 4294967296.0);
  kiln::trainer::update_loss_scale(s, p, true);  // tracker 0: halve
  EXPECT_EQ(s.scale, 2147483648.0);
  kiln::trainer::update_loss_scale(s, p, false);  // clean steps do not refill the tracker...
  kiln::trainer::update_loss_scale(s, p, true);   // ...so the next overflow halves at once
  EXPECT_EQ(s.scale, 1073741824.0);
  EXPECT_EQ(s.growth_tracker, 0);
}

TEST(LossScaler, AWindowOfCleanStepsDoublesAndResetsHysteresis) {
  const MixedPrecision p = fp16(3, 2);
  LossScaleState s{1024.0, 0, 0};
  kiln::trainer::update_loss_scale(s, p, false);
  kiln::trainer::update_loss_scale(s, p, false);
  EXPECT_EQ(s.scale, 1024.0);
  kiln::trainer::update_loss_scale(s, p, true);  // resets the growth tracker
  EXPECT_EQ(s.scale, 512.0);
  for (int i = 0; i < 3; ++i) kiln::trainer::update_loss_scale(s, p, false);
  EXPECT_EQ(s.scale, 1024.0);
  EXPECT_EQ(s.growth_tracker, 0);
  EXPECT_EQ(s.hysteresis_tracker, 2);
}

TEST(LossScaler, NeverBelowTheMinimum) {
  MixedPrecision p = fp16(1000, 1);
  p.min_loss_scale = 2.0;
  LossScaleState s{4.0, 0, 1};
  kiln::trainer::update_loss_scale(s, p, true);
  EXPECT_EQ(s.scale, 2.0);
  EXPECT_FALSE(kiln::trainer::loss_scale_can_drop(s, p));
  kiln::trainer::update_loss_scale(s, p, true);
  EXPECT_EQ(s.scale, 2.0);
}

TEST(LossScaler, StaticAndUnscaledNeverChange) {
  MixedPrecision p = fp16();
  p.loss_scale = 128;
  LossScaleState s = kiln::trainer::initial_loss_scale(p);
  kiln::trainer::update_loss_scale(s, p, true);
  kiln::trainer::update_loss_scale(s, p, true);
  EXPECT_EQ(s.scale, 128.0);
  EXPECT_FALSE(kiln::trainer::loss_scale_can_drop(s, p));
  MixedPrecision bf16;
  bf16.bf16 = true;
  s = kiln::trainer::initial_loss_scale(bf16);
  kiln::trainer::update_loss_scale(s, bf16, true);
  EXPECT_EQ(s.scale, 1.0);
}

TEST(LossScaler, StateRoundTripsThroughJsonAndRefusesNonsense) {
  const LossScaleState s{65536.0, 7, 1};
  const LossScaleState back = kiln::trainer::loss_scale_from_json(kiln::trainer::loss_scale_json(s), "here");
  EXPECT_EQ(back.scale, s.scale);
  EXPECT_EQ(back.growth_tracker, s.growth_tracker);
  EXPECT_EQ(back.hysteresis_tracker, s.hysteresis_tracker);
  for (const char* bad : {R"({"scale": -1, "growth_tracker": 0, "hysteresis_tracker": 2})",
                          R"({"scale": 1e300, "growth_tracker": 0, "hysteresis_tracker": 2})",
                          R"({"scale": 8, "growth_tracker": 0})", R"([1, 2, 3])"}) {
    try {
      kiln::trainer::loss_scale_from_json(nlohmann::json::parse(bad), "meta.json grad_scaler");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const kiln::Error& e) {
      EXPECT_NE(std::string(e.what()).find("meta.json grad_scaler"), std::string::npos) << e.what();
    }
  }
}

TEST(MixedPrecisionFlags, RefusesBadCombinations) {
  MixedPrecision both;
  both.bf16 = both.fp16 = true;
  EXPECT_THROW(both.finalize(), kiln::Error);
  MixedPrecision scaled_bf16;
  scaled_bf16.bf16 = true;
  scaled_bf16.loss_scale = 64;
  EXPECT_THROW(scaled_bf16.finalize(), kiln::Error);
  MixedPrecision window = fp16(0);
  EXPECT_THROW(window.finalize(), kiln::Error);
  EXPECT_NO_THROW(fp16().finalize());
}

// The bf16 train step: parameters and gradient accumulators stay f32 ports,
// the forward computes on CAST copies, and the fp32 graph has no CAST at all.
TEST(MixedPrecisionGraphs, Bf16StepKeepsF32StateAndF16StepTakesALossScale) {
  using kiln::trainer::GptConfig;
  GptConfig cfg;
  cfg.num_layers = 1;
  cfg.hidden_size = 32;
  cfg.seq_length = 8;
  auto casts = [](const kiln::graph::Graph& g) {
    int n = 0;
    for (const auto& node : g.nodes()) n += node.op == KILN_OP_CAST;
    return n;
  };
  const kiln::graph::Graph f32 = kiln::trainer::build_train_step(cfg, 2);
  EXPECT_EQ(casts(f32), 0);
  EXPECT_EQ(f32.find_input(kiln::trainer::kLossScaleInput), nullptr);
  cfg.compute_dtype = KILN_BF16;
  const kiln::graph::Graph bf16 = kiln::trainer::build_train_step(cfg, 2);
  const size_t params = kiln::trainer::gpt_parameters(cfg).size();
  // One cast per parameter into bf16, one per parameter gradient back.
  EXPECT_GE(casts(bf16), static_cast<int>(2 * params));
  for (const auto& s : kiln::trainer::gpt_parameters(cfg)) {
    EXPECT_EQ(bf16.value(bf16.find_input(s.name)->value).dtype, KILN_F32) << s.name;
    const auto* grad = bf16.find_output(kiln::trainer::updated(kiln::trainer::grad_name(s.name)));
    ASSERT_NE(grad, nullptr);
    EXPECT_EQ(bf16.value(grad->value).dtype, KILN_F32) << s.name;
  }
  EXPECT_EQ(bf16.value(bf16.find_output("loss")->value).dtype, KILN_F32);
  EXPECT_EQ(bf16.find_input(kiln::trainer::kLossScaleInput), nullptr);
  cfg.compute_dtype = KILN_F16;
  const kiln::graph::Graph f16 = kiln::trainer::build_train_step(cfg, 2);
  EXPECT_NE(f16.find_input(kiln::trainer::kLossScaleInput), nullptr);
}
