// Everything `kiln train` is told, under Megatron-LM's flag names, and the
// checks that must pass before any work starts.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trainer/attention_backend.h"
#include "trainer/batch_rampup.h"
#include "trainer/data/tokenizer.h"
#include "trainer/exit_flags.h"
#include "trainer/flags.h"
#include "trainer/lr_schedule.h"
#include "trainer/megatron_compat_flags.h"
#include "trainer/mixed_precision.h"
#include "trainer/model/gpt.h"
#include "trainer/step_batch_schedule.h"

namespace kiln::trainer {

inline GptConfig with_megatron_dropout(GptConfig c) {
  c.hidden_dropout = c.attention_dropout = 0.1f;
  return c;
}

struct TrainConfig {
  // The architecture flags (model_options.h) and --hidden-dropout and
  // --attention-dropout write into it directly. Megatron's dropout defaults:
  // GPT-3 scripts that set no dropout train with 0.1.
  GptConfig model = with_megatron_dropout(GptConfig{});

  // Megatron's two flags for grouped-query attention, which finalize() turns
  // into model.num_query_groups (0: multi-head), and --openai-gelu, which
  // only confirms kiln's default GELU.
  bool group_query_attention = false;
  int64_t num_query_groups = 1;
  bool openai_gelu = false;
  // Activation recomputation (docs/DISTRIBUTED.md); finalize_recompute() moves them into `model`.
  bool recompute_activations = false;  // Megatron's shorthand for --recompute-granularity selective
  std::string recompute_granularity;   // "", selective, full
  std::string recompute_method;        // "", uniform, block
  int64_t recompute_num_layers = 0;    // 0: not given (Megatron's None)
  // Their 2021-2023 names (Megatron's arguments.py before and during the
  // rename): --checkpoint-activations is full recomputation, method uniform;
  // --activations-checkpoint-method alone turned full recomputation on;
  // the layer count defaulted to 1. finalize_recompute() maps them.
  bool checkpoint_activations = false;
  std::string activations_checkpoint_method;      // "", uniform, block
  int64_t activations_checkpoint_num_layers = 1;  // Megatron's old default
  // Megatron's --use-checkpoint-args: the model comes from --load's stored config.
  bool use_checkpoint_args = false;
  // Megatron's --deterministic-mode: the backends' bitwise-reproducible
  // kernels (the cpu backend: kiln's own GEMM everywhere, no per-shape library
  // choice). finalize() selects them for every device opened afterwards.
  bool deterministic_mode = false;
  // Megatron's flags for what --load restores and --save writes
  // (docs/CHECKPOINTS.md): --finetune loads the model only and starts at
  // iteration 0; the RNG state is the dropout seed.
  bool finetune = false, no_load_optim = false, no_load_rng = false, no_save_optim = false, no_save_rng = false;
  // Megatron's answers to a resume whose lr / weight-decay schedule differs
  // from the checkpoint's (trainer/checkpoint/schedule_check.h).
  bool override_opt_param_scheduler = false, use_checkpoint_opt_param_scheduler = false;

  // The embedded default job's (`kiln train` alone; Megatron has none).
  int64_t micro_batch_size = 32;
  int64_t global_batch_size = 0;               // 0: micro batch x data-parallel size
  std::vector<std::string> rampup_batch_size;  // --rampup-batch-size START INCREMENT SAMPLES
  BatchRampup rampup;                          // checked from it (inactive without the flag)
  std::string step_batch_size_schedule;        // --step-batch-size-schedule "THRESHOLD:BS ..."
  StepBatchSchedule step_schedule;             // parsed from it (inactive without the flag)
  int64_t train_iters = 300;
  int64_t data_parallel_size = 1;
  int64_t tensor_model_parallel_size = 1;
  int64_t pipeline_model_parallel_size = 1;  // pipeline stages (docs/DISTRIBUTED.md)
  // Megatron's uneven split: the first / last stage's layer count (0: the
  // even share); the other stages share the remaining layers evenly.
  int64_t decoder_first_pipeline_num_layers = 0;
  int64_t decoder_last_pipeline_num_layers = 0;
  // Megatron's interleaved schedule: layers per virtual stage, or (its newer
  // spelling) virtual stages per rank; 0: off. Either sets the model chunks
  // each rank holds (virtual_chunks()).
  int64_t num_layers_per_virtual_pipeline_stage = 0;
  int64_t num_virtual_stages_per_pipeline_rank = 0;

  // Megatron-LM's defaults wherever it has one (arguments.py and its
  // training config at the commit of tests/data/megatron_flags.txt), so a
  // script that leaves a flag out trains as it would there; kiln's own only
  // where Megatron has none: --lr (Megatron requires it), the model shape,
  // --micro-batch-size, --train-iters and the embedded corpus (docs/CLI.md).
  double lr = 3e-3;  // kiln's
  double min_lr = 0.0;
  int64_t lr_warmup_iters = 0;
  // Used only when given (Megatron's None): then the warmup is this fraction
  // of the decay, and a non-zero --lr-warmup-iters is refused beside it.
  double lr_warmup_fraction = 0;
  int64_t lr_decay_iters = 0;  // 0: --train-iters
  // Megatron's sample-based training: --train-samples instead of
  // --train-iters (which becomes train_samples / global batch), and the lr
  // schedule in samples, evaluated at the consumed-samples count.
  int64_t train_samples = 0;      // 0: iteration-based
  int64_t lr_warmup_samples = 0;  // given: overrides --lr-warmup-fraction
  int64_t lr_decay_samples = 0;   // 0: --train-samples
  bool sample_based() const { return train_samples > 0; }
  // The lr schedule in iterations, or in samples when sample_based(); it is
  // evaluated at the iteration or the consumed-samples count.
  LrSchedule lr_schedule() const;
  // Megatron's --decoupled-lr / --decoupled-min-lr: the word embedding and
  // the output layer (ParamSpec::embedding_or_output) follow the same
  // schedule between these two rates instead; < 0: not given (the min
  // defaults to --min-lr).
  double decoupled_lr = -1;
  double decoupled_min_lr = -1;
  bool decouples_lr() const { return decoupled_lr >= 0; }
  // Megatron's --calculate-per-token-loss: the loss is the mean over every
  // token of the global batch that counts, not a mean of micro-batch means.
  // They differ only when the micro-batches count different tokens, which
  // is --eod-mask-loss: then each token's loss weighs 1 / (the global
  // batch's kept tokens), counted on the host and summed over the
  // data-parallel ranks before the step, and nothing divides it afterwards.
  bool calculate_per_token_loss = false;
  bool weighs_tokens_globally() const { return calculate_per_token_loss && model.eod_mask_loss; }
  LrSchedule decoupled_lr_schedule() const;
  std::string lr_decay_style = "linear";
  double weight_decay = 0.01;
  double clip_grad = 1.0;
  double adam_beta1 = 0.9;
  double adam_beta2 = 0.999;
  double adam_eps = 1e-8;
  int64_t seed = 1234;
  MixedPrecision precision;  // --bf16, --fp16 and loss scaling

  // Megatron flags with no effect in kiln, warned about, or refused (docs/CLI.md).
  MegatronCompatFlags megatron_compat;

  std::string save;
  std::string load;
  // Megatron's --exit-on-missing-checkpoint: a --load with no checkpoint is
  // an error instead of a start from random.
  bool exit_on_missing_checkpoint = false;
  // Set by finalize(): --load holds no checkpoint yet (the first launch of a
  // `--save X --load X` script), so the run starts from random as Megatron's.
  bool load_missing = false;
  int64_t save_interval = 0;
  // Megatron's 1000 of 2019 to 2025 (arguments.py until 72230d25ca). Its
  // training config since has None ("no evaluation during training"), but
  // get_train_valid_test_num_samples divides --train-iters by it, so a run
  // with validation data that leaves it out stops with a TypeError there;
  // kiln keeps the last default that ran.
  int64_t eval_interval = 1000;
  int64_t eval_iters = 100;
  int64_t log_interval = 100;

  bool mock_data = false;
  std::vector<std::string> data_path;
  std::string split = "969,30,1";
  data::TokenizerSpec tokenizer_spec;  // --tokenizer-type, --vocab-file, --merge-file, --tokenizer-model
  int64_t make_vocab_size_divisible_by = 128;
  // The tokenizer of --data-path (or of --mock-data with --tokenizer-type),
  // loaded by finalize(): the model's vocab is its size padded as Megatron
  // pads it, and checkpoints record which it was. Null without one.
  std::shared_ptr<const data::Tokenizer> tokenizer;
  std::string data_cache_path;  // index caches; empty: beside the data

  std::string backend = "cpu";
  // --attention-backend: the fused attention core where the backend has it
  // (trainer/attention_backend.h).
  AttentionBackend attention_backend = AttentionBackend::Auto;
  int64_t device = 0;
  int64_t num_threads = 0;   // 0: all cores
  std::string metrics_file;  // JSONL, one object per logged iteration

  // Distributed and fault-tolerant runs (docs/DISTRIBUTED.md).
  double distributed_timeout_minutes = 10;  // a collective waiting longer ends the job
  int64_t ddp_bucket_size = 40000000;       // gradient all-reduce bucket, in elements
  int64_t check_weight_hash_interval = 0;   // compare parameter hashes across ranks every N steps
  bool use_distributed_optimizer = false;   // shard the AdamW state over data-parallel ranks (ZeRO-1)
  bool sequence_parallel = false;           // --sequence-parallel (model.sequence_parallel once checked)
  bool overlap_grad_reduce = false;         // gradient buckets start during backward (not with PP)
  bool overlap_param_gather = false;        // parameter all-gathers run into the next forward
  double exit_duration_in_mins = 0;         // save and exit after this long (0: never)
  std::string save_trigger_file;            // default <save>/kiln-save-now
  std::string exit_trigger_file;            // default <save>/kiln-exit-now
  ExitFlags exit;                           // Megatron's --exit-signal-handler, --exit-interval; --trigger-path
  std::string tensorboard_dir;
  bool log_throughput = false;  // Megatron's TFLOP/s/GPU field in the iteration line
  bool profile = false;         // --profile, KILN_PROFILE=1: where the time goes, at the end (graph/run_profile.h)

  // --use-distributed-optimizer with more than one data-parallel rank: each
  // rank holds and updates only its part of the optimizer state.
  bool shards_optimizer() const { return use_distributed_optimizer && data_parallel_size > 1; }
  // --load names a checkpoint to restore (not a first launch's empty dir).
  bool resumes() const { return !load.empty() && !load_missing; }
  // The global batch changes during the run (--rampup-batch-size or
  // --step-batch-size-schedule).
  bool batch_varies() const { return rampup.active() || step_schedule.active(); }
  // The largest global batch a step takes.
  int64_t max_global_batch() const { return step_schedule.active() ? step_schedule.max_batch() : global_batch_size; }
  // The most micro-batches a step takes.
  int64_t num_micro_batches() const { return max_global_batch() / (micro_batch_size * data_parallel_size); }
  // The global batch of the step that begins after `consumed` samples:
  // --global-batch-size, or the ramp's or the schedule's.
  int64_t global_batch_at(int64_t consumed) const {
    if (step_schedule.active()) return step_schedule.global_batch(consumed);
    return rampup.active() ? rampup.global_batch(consumed) : global_batch_size;
  }
  // Micro-batches each data-parallel rank evaluates: as Megatron's
  // evaluate(), --eval-iters steps of --global-batch-size (the full one,
  // also during a ramp).
  int64_t eval_micro_batches() const {
    return eval_iters * (global_batch_size / (micro_batch_size * data_parallel_size));
  }
  int64_t micro_batches_at(int64_t consumed) const {
    return global_batch_at(consumed) / (micro_batch_size * data_parallel_size);
  }
  // Throws unless a step of `batch` splits into whole micro-batches on
  // every data-parallel rank (--step-batch-size-schedule's batches).
  void check_step_batch(int64_t batch) const;
  // The samples `iterations` steps consume.
  int64_t consumed_after(int64_t iterations) const {
    if (step_schedule.active()) return step_schedule.consumed_after(iterations);
    return rampup.active() ? rampup.consumed_after(iterations) : iterations * global_batch_size;
  }

  // The model part pipeline stage `stage` holds (the whole model without
  // pipeline parallelism): Megatron's split of the layers.
  GptConfig stage_model(int64_t stage) const;
  // How many layers pipeline stage `stage` holds.
  int64_t stage_layers(int64_t stage) const;
  // Model chunks per pipeline rank (Megatron's virtual pipeline size vp; 1
  // without the interleaved schedule). Chunk c of stage p is virtual stage
  // c x P + p: layers [v x L/(P vp), (v+1) x L/(P vp)), the embedding on
  // virtual stage 0, the head and loss on the last.
  int64_t virtual_chunks() const;
  GptConfig chunk_model(int64_t stage, int64_t chunk) const;
  // Every chunk stage `stage` holds, in chunk order (stage_model(stage) alone
  // without the interleaved schedule).
  std::vector<GptConfig> stage_chunks(int64_t stage) const;

  void register_flags(Flags& flags);
  // Fills defaults that depend on other flags and throws kiln::Error for any
  // inconsistent combination, before any device or file is touched.
  void finalize(const Flags& flags);

 private:
  // register_flags in groups, in --help's order.
  void register_architecture_flags(Flags& flags);
  void register_recompute_flags(Flags& flags);
  void register_batch_and_layout_flags(Flags& flags);
  void register_optimizer_flags(Flags& flags);
  void register_checkpoint_flags(Flags& flags);
  void register_data_flags(Flags& flags);
  void register_runtime_flags(Flags& flags);
  void register_job_control_flags(Flags& flags);
  // The architecture flags into `model`, with the checks that need the flags themselves.
  void finalize_architecture(const Flags& flags);
  void check_load();
  void finalize_train_samples(const Flags& flags);
  void finalize_batch_schedule(const Flags& flags);
  // --data-path checks.
  void finalize_data();
  // Loads the tokenizer and sets model.vocab_size to its size padded to a
  // multiple of --make-vocab-size-divisible-by x tensor-parallel size.
  void load_tokenizer(const Flags& flags);
  // Throws naming the flags when an activation would exceed the IR's limit.
  void check_tensor_sizes() const;
  void check_pipeline_layout() const;
  // The interleaved schedule's flags, refused in Megatron's words where it refuses them.
  void check_virtual_pipeline() const;
  // The --recompute-* flags into `model`, refusing Megatron's invalid combinations.
  void finalize_recompute(const Flags& flags);
  // The old names above into the --recompute-* fields, refusing a mix of old and new.
  void map_old_recompute_flags(const Flags& flags);
};

}  // namespace kiln::trainer
