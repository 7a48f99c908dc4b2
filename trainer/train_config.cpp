#include "trainer/train_config.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>

#include "core/cpu_count.h"
#include "core/error.h"
#include "core/log.h"
#include "trainer/checkpoint/checkpoint_io.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/checkpoint/schedule_check.h"
#include "trainer/data/gpt_dataset.h"
#include "trainer/lr_schedule.h"
#include "trainer/model/document_inputs.h"

namespace kiln::trainer {

namespace {
// Durations above a year are typos (or 1e300), and would overflow the
// clocks they are added to.
constexpr double kMaxMinutes = 365.0 * 24 * 60;
// Sequence counts are multiplied together (by data-parallel ranks, micro
// batches, iterations), so they stay far below int64's range.
constexpr double kMaxBatch = 1 << 30;
}  // namespace

// The architecture (trainer/model/model_options.h) and the Megatron flags whose meaning spans fields.
void TrainConfig::register_architecture_flags(Flags& f) {
  register_model_flags(f, model);
  f.add_alias("--layernorm-epsilon", "--norm-epsilon",
              "Megatron's name for --norm-epsilon until 4dc0715204 (2023-09-08), which older Llama scripts pass");
  f.add("--openai-gelu", &openai_gelu, "GELU with the tanh approximation in the MLP (kiln's default, GPT-2's)");
  f.add("--group-query-attention", &group_query_attention, "grouped-query attention (--num-query-groups)");
  f.add("--num-query-groups", &num_query_groups, "K/V head groups with --group-query-attention");
  f.add("--hidden-dropout", &model.hidden_dropout,
        "dropout after the embeddings and on each attention and MLP output (Megatron's default)",
        Bounds::half_open(0, 1));
  f.add("--attention-dropout", &model.attention_dropout, "dropout on the attention probabilities (Megatron's default)",
        Bounds::half_open(0, 1));
}

// Batch sizes, training length and the parallel layout.
void TrainConfig::register_batch_and_layout_flags(Flags& f) {
  f.add("--micro-batch-size", &micro_batch_size, "sequences per micro-batch (kiln's default: Megatron requires it)",
        Bounds::closed(1, kMaxBatch));
  f.add("--global-batch-size", &global_batch_size, "sequences per optimizer step (default: micro batch x DP)",
        Bounds::closed(0, kMaxBatch));
  f.add("--rampup-batch-size", &rampup_batch_size,
        "START INCREMENT SAMPLES: the global batch grows from START by INCREMENT over SAMPLES consumed samples to "
        "--global-batch-size; kiln extension: with --train-iters too (Megatron refuses it), where the run takes "
        "that many steps whatever their batch and the lr schedule counts steps");
  f.add("--step-batch-size-schedule", &step_batch_size_schedule,
        "\"THRESHOLD:BS ...\": Megatron's step schedule, the global batch is BS from THRESHOLD consumed tokens on "
        "(suffixes K M B T, e.g. \"0:16 2.4B:320\"); kiln extension: --global-batch-size may be given if it is the "
        "last BS (Megatron refuses both); with --train-iters the lr schedule counts steps");
  f.add("--train-iters", &train_iters, "optimizer steps to train for (kiln's default: Megatron requires it)");
  f.add("--tensor-model-parallel-size", &tensor_model_parallel_size, "tensor-parallel ranks");
  f.add("--sequence-parallel", &sequence_parallel,
        "with --tensor-model-parallel-size > 1: norms, dropout and residual adds on each rank's slice of the "
        "sequence, all-gather / reduce-scatter instead of all-reduce");
  f.add("--pipeline-model-parallel-size", &pipeline_model_parallel_size,
        "pipeline stages, each holding an equal share of the layers (1F1B schedule)");
  f.add("--decoder-first-pipeline-num-layers", &decoder_first_pipeline_num_layers,
        "layers of the first pipeline stage (default: an equal share)");
  f.add("--decoder-last-pipeline-num-layers", &decoder_last_pipeline_num_layers,
        "layers of the last pipeline stage (default: an equal share)");
  f.add("--num-layers-per-virtual-pipeline-stage", &num_layers_per_virtual_pipeline_stage,
        "interleaved 1F1B: layers per virtual pipeline stage (each rank holds several model chunks)");
  f.add("--num-virtual-stages-per-pipeline-rank", &num_virtual_stages_per_pipeline_rank,
        "interleaved 1F1B: model chunks (virtual stages) per pipeline rank");
}

// The learning-rate schedule, AdamW and the seed.
void TrainConfig::register_optimizer_flags(Flags& f) {
  f.add("--lr", &lr, "peak learning rate (kiln's default: Megatron requires it)", Bounds::at_least(0));
  f.add("--min-lr", &min_lr, "learning rate at the end of decay", Bounds::at_least(0));
  f.add("--decoupled-lr", &decoupled_lr,
        "peak learning rate of the word embedding and the output layer, on the same schedule (default: --lr)",
        Bounds::at_least(0));
  f.add("--decoupled-min-lr", &decoupled_min_lr,
        "with --decoupled-lr: their learning rate at the end of decay (default: --min-lr)", Bounds::at_least(0));
  f.add("--lr-warmup-iters", &lr_warmup_iters, "linear warmup steps from lr 0");
  f.add("--lr-warmup-fraction", &lr_warmup_fraction,
        "warmup as a fraction of --lr-decay-iters (or --lr-decay-samples); not with --lr-warmup-iters / "
        "--lr-warmup-samples (default: not given, no warmup)",
        Bounds::half_open(0, 1));
  f.add("--lr-decay-iters", &lr_decay_iters, "decay steps (default: --train-iters)");
  f.add("--lr-decay-style", &lr_decay_style, "constant | linear | cosine | inverse-square-root");
  f.add("--train-samples", &train_samples,
        "train for this many samples instead of --train-iters (iterations = samples / global batch size)");
  f.add("--lr-warmup-samples", &lr_warmup_samples, "with --train-samples: linear warmup samples from lr 0");
  f.add("--lr-decay-samples", &lr_decay_samples, "with --train-samples: decay samples (default: --train-samples)");
  f.add("--weight-decay", &weight_decay, "AdamW decoupled weight decay (not on biases/LayerNorm)", Bounds::at_least(0));
  f.add("--clip-grad", &clip_grad, "clip the global gradient norm to this (0: off)", Bounds::at_least(0));
  f.add("--adam-beta1", &adam_beta1, "AdamW beta1", Bounds::half_open(0, 1));
  f.add("--adam-beta2", &adam_beta2, "AdamW beta2", Bounds::half_open(0, 1));
  f.add("--adam-eps", &adam_eps, "AdamW epsilon", Bounds::at_least(0));
  f.add("--seed", &seed, "random seed (initialisation and data order)");
}

// Saving and resuming (docs/CHECKPOINTS.md).
void TrainConfig::register_checkpoint_flags(Flags& f) {
  f.add("--save", &save, "checkpoint directory to write");
  f.add("--load", &load, "checkpoint directory (or iter_XXXXXXX dir) to resume from");
  f.add("--exit-on-missing-checkpoint", &exit_on_missing_checkpoint,
        "error out when --load holds no checkpoint (default: warn and start from random, as Megatron)");
  f.add("--finetune", &finetune,
        "load only the model from --load: fresh optimizer and RNG state, iteration and consumed samples from 0");
  f.add("--no-load-optim", &no_load_optim, "do not load the optimizer state (AdamW moments) from --load");
  f.add("--no-load-rng", &no_load_rng, "do not load the RNG state (the dropout seed) from --load; use --seed");
  f.add("--no-save-optim", &no_save_optim, "save checkpoints without the optimizer state");
  f.add("--no-save-rng", &no_save_rng, "save checkpoints without the RNG state");
  // With their names before Megatron's 04ecc83465 (2022-01-28), --override-lr-scheduler and
  // --use-checkpoint-lr-scheduler, which scripts of that time pass.
  for (const char* name :
       {"--override-opt_param-scheduler", "--override-opt-param-scheduler", "--override-lr-scheduler"})
    f.add(name, &override_opt_param_scheduler, "on resume, use the command line's lr schedule over the checkpoint's");
  for (const char* name : {"--use-checkpoint-opt_param-scheduler", "--use-checkpoint-opt-param-scheduler",
                           "--use-checkpoint-lr-scheduler"})
    f.add(name, &use_checkpoint_opt_param_scheduler, "on resume, use the checkpoint's lr schedule over the flags'");
  f.add("--save-interval", &save_interval, "save every N steps (0: only at the end when --save is set)");
}

// Evaluation, logging cadence, data and tokenizer.
void TrainConfig::register_data_flags(Flags& f) {
  f.add("--eval-interval", &eval_interval, "evaluate every N steps");
  f.add("--eval-iters", &eval_iters, "global batches per evaluation, as Megatron (0: no evaluation)");
  f.add("--log-interval", &log_interval, "print a log line every N steps");
  f.add("--mock-data", &mock_data, "random tokens, for benchmarks (needs --vocab-size)");
  f.add("--data-path", &data_path, "Megatron .bin/.idx prefix(es), optionally weighted");
  f.add("--split", &split, "train,valid,test proportions");
  f.add("--vocab-file", &tokenizer_spec.vocab_file, "GPT-2 vocab.json (GPT2BPETokenizer)");
  f.add("--merge-file", &tokenizer_spec.merge_file, "GPT-2 merges.txt (GPT2BPETokenizer)");
  f.add("--tokenizer-type", &tokenizer_spec.type, std::string("tokenizer: ") + data::kTokenizerTypes);
  f.add("--tokenizer-model", &tokenizer_spec.tokenizer_model,
        "tokenizer.json or its directory (HuggingFaceTokenizer), tokenizer.model (SentencePiece types)");
  f.add("--make-vocab-size-divisible-by", &make_vocab_size_divisible_by,
        "pad the tokenizer's vocab to a multiple of this (x tensor-parallel size)");
  f.add("--data-cache-path", &data_cache_path, "directory for the dataset index caches (default: beside the data)");
  // Packed documents (trainer/model/document_inputs.h), found by the tokenizer's EOD.
  f.add("--reset-position-ids", &model.reset_position_ids, "positions restart after each EOD token");
  f.add("--reset-attention-mask", &model.reset_attention_mask,
        "each token attends only within its own document (an EOD ends one)");
  f.add("--eod-mask-loss", &model.eod_mask_loss, "no loss on the tokens whose input is EOD");
  f.add("--calculate-per-token-loss", &calculate_per_token_loss,
        "the loss (and its gradient) is the mean over the global batch's tokens, not the mean of the micro-batch "
        "means; they differ only with --eod-mask-loss");
}

// The device, metrics and the data-parallel collectives.
void TrainConfig::register_runtime_flags(Flags& f) {
  f.add("--backend", &backend, "backend plugin name or path to a plugin .so");
  f.add("--device", &device, "device index within the backend");
  f.add_parsed(
      "--attention-backend", [this](const std::string& s) { attention_backend = parse_attention_backend(s); },
      [this] { return std::string(to_string(attention_backend)); },
      "auto|flash|fused: one fused ATTENTION kernel per layer where the backend has one (the probabilities never "
      "stored); unfused|local: the MATMUL, softmax, MATMUL chain. The same function either way");
  f.add("--num-threads", &num_threads, "CPU threads for host-CPU backends (0: all cores; capped at the CPUs)",
        Bounds::closed(0, kMaxThreadsFlag));
  f.add("--metrics-file", &metrics_file, "append one JSON object per logged step to this file");
  f.add("--distributed-timeout-minutes", &distributed_timeout_minutes,
        "end the job when a collective waits longer than this (a rank died or hangs)",
        Bounds::left_open(0, kMaxMinutes));
  f.add("--ddp-bucket-size", &ddp_bucket_size,
        "data-parallel bucket size, in elements (the gradient all-reduce, or the distributed optimizer's "
        "reduce-scatter and all-gather)");
  f.add("--use-distributed-optimizer", &use_distributed_optimizer,
        "shard the AdamW moments and fp32 main parameters over the data-parallel ranks (ZeRO-1)");
  f.add("--overlap-grad-reduce", &overlap_grad_reduce,
        "start the data-parallel gradient all-reduce (or reduce-scatter) bucket by bucket during the last "
        "micro-batch's backward (--ddp-bucket-size elements each)");
  f.add("--overlap-param-gather", &overlap_param_gather,
        "overlap the distributed optimizer's parameter all-gather with the next forward (bucket by bucket)");
  f.add("--check-weight-hash-across-dp-replicas-interval", &check_weight_hash_interval,
        "every N steps, check that parameters are bit-identical on all ranks (0: off)");
}

// Ending a job early: time limit, trigger files, signals (trainer/job_control.h).
void TrainConfig::register_job_control_flags(Flags& f) {
  f.add("--exit-duration-in-mins", &exit_duration_in_mins, "save and exit 0 after running this long (0: off)",
        Bounds::closed(0, kMaxMinutes));
  f.add("--save-trigger-file", &save_trigger_file,
        "if this file exists (checked every --log-interval steps), save and delete it (default <save>/kiln-save-now)");
  f.add("--exit-trigger-file", &exit_trigger_file,
        "if this file exists (checked every --log-interval steps), save and exit 0 (default <save>/kiln-exit-now)");
  exit.register_flags(f);
}

void TrainConfig::register_flags(Flags& f) {
  register_architecture_flags(f);
  register_recompute_flags(f);
  f.add("--deterministic-mode", &deterministic_mode,
        "bitwise-reproducible kernels on any machine (cpu: kiln's own GEMM for every shape, KILN_CPU_GEMM=kiln)");
  f.add("--use-checkpoint-args", &use_checkpoint_args,
        "take the model (every architecture flag) from the --load checkpoint's stored config");
  register_batch_and_layout_flags(f);
  register_optimizer_flags(f);
  precision.register_flags(f);
  register_checkpoint_flags(f);
  register_data_flags(f);
  register_runtime_flags(f);
  register_job_control_flags(f);
  f.add("--tensorboard-dir", &tensorboard_dir, "write TensorBoard event files here");
  f.add("--log-throughput", &log_throughput,
        "add Megatron's 'throughput per GPU (TFLOP/s/GPU)' (its model-FLOPs count) to the iteration line");
  f.add("--profile", &profile,
        "at the end, print where the time went per device: plugin, cpu fallback, copies between them, and the "
        "pieces by time (also KILN_PROFILE=1; docs/PLUGIN_GUIDE.md)");
  megatron_compat.register_flags(f);
}

void TrainConfig::finalize_architecture(const Flags& f) {
  if (!(model.layernorm_epsilon > 0))
    throw Error(fmt::format("{} must be positive, got {:g}",
                            f.given("--layernorm-epsilon") ? "--layernorm-epsilon" : "--norm-epsilon",
                            model.layernorm_epsilon));
  if (f.given("--num-query-groups") && !group_query_attention)
    throw Error("--num-query-groups needs --group-query-attention (as Megatron, it is ignored otherwise)");
  if (group_query_attention && num_query_groups <= 0)
    throw Error("--num-query-groups must be positive, got " + std::to_string(num_query_groups));
  model.num_query_groups = group_query_attention ? num_query_groups : 0;
  if (f.given("--kv-channels") && model.kv_channels <= 0)
    throw Error("--kv-channels must be positive, got " + std::to_string(model.kv_channels));
  if (f.given("--ffn-hidden-size") && model.ffn_hidden_size <= 0)
    throw Error("--ffn-hidden-size must be positive, got " + std::to_string(model.ffn_hidden_size));
  if (openai_gelu && model.exact_gelu)
    throw Error("--openai-gelu (tanh) and --exact-gelu (erf) choose different GELUs; give one of them");
  if (openai_gelu && model.squared_relu)
    throw Error("--openai-gelu chooses GELU, and --squared-relu replaces it; give one of them");
  // Megatron allows a larger --max-position-embeddings: with learned
  // absolute positions the table has that many rows (the model uses the
  // first --seq-length); rope, alibi and none have no table to size, and
  // a table of --seq-length rows is the default (0).
  int64_t& table_rows = model.max_position_embeddings;
  if (table_rows != 0 && table_rows < model.seq_length)
    throw Error("--max-position-embeddings " + std::to_string(table_rows) + " is smaller than --seq-length " +
                std::to_string(model.seq_length) + "; give it at least the sequence length, or leave it out");
  if (model.position_embedding_type != PositionEmbedding::LearnedAbsolute || table_rows == model.seq_length)
    table_rows = 0;
  if (use_checkpoint_args && load.empty())
    throw Error("--use-checkpoint-args needs --load DIR, the checkpoint whose model config to use");
  if (use_checkpoint_args && load_missing)
    logger().info("Checkpoint not found to provide arguments, using provided arguments.");  // Megatron's words
  if (use_checkpoint_args && !load_missing) {
    // As Megatron: the checkpoint's model replaces the model flags.
    // meta.json alone (the weights are read later, by the load itself), and
    // through checkpoint_architecture, whose errors name the file: this path
    // said only "checkpoint meta.json", and its sizes went unchecked here.
    const LoadedCheckpoint ck = load_checkpoint(load, CheckpointParts::Meta);
    take_architecture(model, checkpoint_architecture(ck));
  }
}

// Megatron's load_checkpoint: a --load with no checkpoint yet (the first
// launch of a `--save X --load X` script) starts from random with a warning
// (Setup prints it). A file or a partial checkpoint stays load_checkpoint's
// error: that is bad input, not a first launch.
void TrainConfig::check_load() {
  if (load.empty() || !holds_no_checkpoint(load)) return;
  std::string what = "--load ";
  what += load;
  what += std::filesystem::exists(load) ? " holds no checkpoint" : " does not exist";
  if (finetune)
    throw Error(what +
                "; --finetune starts from a checkpoint's model: point --load at a --save directory or an "
                "iter_XXXXXXX checkpoint");
  if (exit_on_missing_checkpoint)
    throw Error(what +
                " and --exit-on-missing-checkpoint is given; point --load at a --save directory, or drop "
                "the flag to start from random");
  load_missing = true;
}

// Megatron's sample-based training (arguments.py, training.py) without batch
// ramp-up: the iterations are --train-samples / global batch, and the lr
// schedule counts samples. Its rules keep the two modes apart.
void TrainConfig::finalize_train_samples(const Flags& f) {
  if (train_samples < 0 || (train_samples == 0 && f.given("--train-samples")))
    throw Error("--train-samples must be positive, got " + std::to_string(train_samples) +
                " (it is the run's length; leave it out to train --train-iters iterations)");
  if (lr_warmup_samples < 0) throw Error("--lr-warmup-samples must not be negative");
  if (lr_decay_samples < 0) throw Error("--lr-decay-samples must not be negative");
  if (!sample_based()) {
    if (f.given("--lr-decay-samples"))
      throw Error(
          "--lr-decay-samples needs --train-samples (Megatron: expected iteration-based learning rate decay); give "
          "--train-samples, or use --lr-decay-iters");
    if (f.given("--lr-warmup-samples"))
      throw Error(
          "--lr-warmup-samples needs --train-samples (Megatron: expected iteration-based learning rate warmup); give "
          "--train-samples, or use --lr-warmup-iters");
    return;
  }
  if (f.given("--train-iters"))
    throw Error(
        "--train-iters and --train-samples exclude each other (Megatron: expected sample-based training); "
        "give one of them");
  if (f.given("--lr-decay-iters"))
    throw Error(
        "--lr-decay-iters needs --train-iters (Megatron: expected sample-based learning rate decay); with "
        "--train-samples use --lr-decay-samples");
  if (f.given("--lr-warmup-iters"))
    throw Error(
        "--lr-warmup-iters needs --train-iters (Megatron: expected sample-based learning rate warmup); with "
        "--train-samples use --lr-warmup-samples");
  if (f.given("--lr-warmup-fraction") && lr_warmup_samples != 0)
    throw Error(
        "--lr-warmup-fraction and --lr-warmup-samples both set the warmup (Megatron: can only specify one of "
        "lr-warmup-fraction and lr-warmup-samples); give one of them");
  if (step_schedule.active())
    train_iters = step_schedule.train_iters(train_samples);
  else
    train_iters = rampup.active() ? rampup.train_iters(train_samples) : train_samples / global_batch_size;
  if (train_iters == 0)
    throw Error("--train-samples " + std::to_string(train_samples) + " is less than one global batch (" +
                std::to_string(global_batch_at(0)) + "): nothing to train; give at least that many samples");
  if (lr_decay_samples == 0) lr_decay_samples = train_samples;
  if (f.given("--lr-warmup-fraction"))
    lr_warmup_samples = static_cast<int64_t>(lr_warmup_fraction * static_cast<double>(lr_decay_samples));
  if (lr_warmup_samples >= lr_decay_samples)
    throw Error("--lr-warmup-samples (" + std::to_string(lr_warmup_samples) +
                ") must be less than --lr-decay-samples (" + std::to_string(lr_decay_samples) +
                ", defaults to --train-samples)");
}

// The global batch: --global-batch-size, with --rampup-batch-size's ramp up
// to it, or --step-batch-size-schedule's steps (whose last batch is
// Megatron's global batch size).
void TrainConfig::finalize_batch_schedule(const Flags& f) {
  const int64_t micro_times_dp = micro_batch_size * data_parallel_size;
  if (f.given("--step-batch-size-schedule")) {
    if (f.given("--rampup-batch-size"))
      throw Error("--step-batch-size-schedule and --rampup-batch-size both set the batch schedule; give one of them");
    step_schedule = StepBatchSchedule(step_batch_size_schedule, model.seq_length);
    if (f.given("--global-batch-size") && global_batch_size != step_schedule.last_batch())
      throw Error("--global-batch-size " + std::to_string(global_batch_size) +
                  " differs from --step-batch-size-schedule's last batch size " +
                  std::to_string(step_schedule.last_batch()) +
                  " (Megatron: cannot specify both); drop --global-batch-size or make it the last batch size");
    global_batch_size = step_schedule.last_batch();
    // Megatron checks each step's batch when it is reached (a resume on more
    // ranks may have passed the small ones); a fresh run checks them all now.
    if (!resumes())
      for (const auto& entry : step_schedule.entries()) check_step_batch(entry.second);
  }
  if (global_batch_size == 0) global_batch_size = micro_times_dp;
  if (global_batch_size <= 0 || global_batch_size % micro_times_dp != 0)
    throw Error("--global-batch-size " + std::to_string(global_batch_size) +
                " is not divisible by --micro-batch-size " + std::to_string(micro_batch_size) +
                " x data-parallel size " + std::to_string(data_parallel_size) + "; make it a multiple of " +
                std::to_string(micro_times_dp));
  if (f.given("--rampup-batch-size")) rampup = BatchRampup(rampup_batch_size, global_batch_size, micro_times_dp);
}

void TrainConfig::check_step_batch(int64_t batch) const {
  const int64_t micro_times_dp = micro_batch_size * data_parallel_size;
  if (batch % micro_times_dp != 0)
    throw Error("--step-batch-size-schedule: current global batch size (" + std::to_string(batch) +
                ") is not divisible by micro_batch_size (" + std::to_string(micro_batch_size) +
                ") * data_parallel_size (" + std::to_string(data_parallel_size) +
                "); make every batch size in the schedule a multiple of " + std::to_string(micro_times_dp));
}

LrSchedule TrainConfig::lr_schedule() const {
  if (sample_based()) return {lr, min_lr, lr_warmup_samples, lr_decay_samples, lr_decay_style};
  return {lr, min_lr, lr_warmup_iters, lr_decay_iters, lr_decay_style};
}

// Megatron's _update_min_and_max_lr_in_param_groups: the decoupled group's
// max_lr and min_lr, the scheduler's warmup, decay and style.
LrSchedule TrainConfig::decoupled_lr_schedule() const {
  const LrSchedule main = lr_schedule();
  return {decoupled_lr, decoupled_min_lr >= 0 ? decoupled_min_lr : min_lr, main.warmup_iters(), main.decay_iters(),
          main.style()};
}

void TrainConfig::finalize(const Flags& f) {
  check_load();
  finalize_architecture(f);
  model.validate();
  if (micro_batch_size <= 0) throw Error("--micro-batch-size must be positive");
  if (train_iters < 0) throw Error("--train-iters must not be negative");
  finalize_batch_schedule(f);
  finalize_train_samples(f);
  if (!sample_based() && lr_decay_iters == 0) lr_decay_iters = train_iters;
  // Megatron: no warmup unless one is given, and one way to give it.
  if (!sample_based() && f.given("--lr-warmup-fraction")) {
    if (lr_warmup_iters != 0)
      throw Error(
          "--lr-warmup-fraction and --lr-warmup-iters both set the warmup (Megatron: can only specify one of "
          "lr-warmup-fraction and lr-warmup-iters); give one of them");
    lr_warmup_iters = static_cast<int64_t>(lr_warmup_fraction * static_cast<double>(lr_decay_iters));
  }
  // F3: the schedule would blame --lr-decay-iters for what --train-iters 0 did.
  if (!sample_based() && train_iters == 0 && !f.given("--lr-decay-iters"))
    throw Error("--train-iters 0 trains nothing; give --train-iters N with N > 0 (or --train-samples)");
  (void)lr_schedule();  // throws if invalid
  if (!decouples_lr() && f.given("--decoupled-min-lr"))
    throw Error("--decoupled-min-lr needs --decoupled-lr (the decoupled group's peak rate); give both, or neither");
  if (decouples_lr()) {
    const double floor = decoupled_min_lr >= 0 ? decoupled_min_lr : min_lr;
    if (floor > decoupled_lr)
      throw Error(fmt::format("--decoupled-min-lr ({}{}) must not exceed --decoupled-lr ({})", floor,
                              f.given("--decoupled-min-lr") ? "" : ", from --min-lr", decoupled_lr));
    (void)decoupled_lr_schedule();  // the rest of its checks are the main schedule's
  }
  if (log_interval <= 0) throw Error("--log-interval must be positive");
  if (eval_interval <= 0) throw Error("--eval-interval must be positive");
  if (eval_iters < 0) throw Error("--eval-iters must not be negative");
  if (save_interval < 0) throw Error("--save-interval must not be negative");
  if (save_interval > 0 && save.empty()) throw Error("--save-interval needs --save DIR");
  if (clip_grad < 0) throw Error("--clip-grad must not be negative");
  precision.finalize();
  megatron_compat.finalize(f);
  // Plugins read their kernel choices from the environment when they open a
  // device and compile (and precompile's workers inherit it); the policy is
  // in the cpu device's fingerprint, so it keys its own cache entries.
  if (deterministic_mode) setenv("KILN_CPU_GEMM", "kiln", 1);
  if (const char* env = std::getenv("KILN_PROFILE"); env != nullptr && *env != '\0' && std::string(env) != "0")
    profile = true;
  model.compute_dtype = precision.compute_dtype();
  model.grad_dtype = precision.grad_dtype();
  model.clip_stored_gradients = precision.clips_stored_gradients();
  model.query_key_layer_scaling = precision.apply_query_key_layer_scaling;
  model.fp8 = precision.fp8();
  if (!data_path.empty() || mock_data) data::infer_tokenizer_type(tokenizer_spec);
  const bool tokenizer_flags = !tokenizer_spec.type.empty() || !tokenizer_spec.vocab_file.empty() ||
                               !tokenizer_spec.merge_file.empty() || !tokenizer_spec.tokenizer_model.empty();
  if (!data_path.empty()) {
    if (mock_data) throw Error("--mock-data and --data-path exclude each other; pick one");
    finalize_data();
    load_tokenizer(f);
  } else if (mock_data && !tokenizer_spec.type.empty()) {
    load_tokenizer(f);  // Megatron's mock-data benchmarks: --tokenizer-type NullTokenizer --vocab-size N
  } else {
    if (tokenizer_flags)
      throw Error(
          "--tokenizer-type, --vocab-file, --merge-file and --tokenizer-model only apply with --data-path PREFIX "
          "(make one with kiln preprocess) or --mock-data");
    if (mock_data && !f.given("--vocab-size") && !(use_checkpoint_args && !load_missing))
      throw Error("--mock-data needs --vocab-size N (as Megatron's NullTokenizer)");
    if (!mock_data && model.vocab_size != 256)
      throw Error("--vocab-size " + std::to_string(model.vocab_size) +
                  " needs --mock-data; the embedded corpus is byte-level (vocab 256)");
  }
  if (uses_documents(model) && !tokenizer)
    throw Error(std::string(model.eod_mask_loss          ? "--eod-mask-loss"
                            : model.reset_attention_mask ? "--reset-attention-mask"
                                                         : "--reset-position-ids") +
                " finds documents by the tokenizer's EOD token, and this run has no tokenizer: train on --data-path "
                "PREFIX (kiln preprocess --append-eod ends each document with EOD)");
  if (finetune && load.empty()) throw Error("--finetune needs --load CKPT, the checkpoint whose model to start from");
  if (device < 0) throw Error("--device must not be negative");
  num_threads = cap_at_available_cpus("--num-threads", num_threads);
  if (distributed_timeout_minutes <= 0) throw Error("--distributed-timeout-minutes must be positive");
  if (ddp_bucket_size <= 0) throw Error("--ddp-bucket-size must be positive");
  // --overlap-grad-reduce starts each bucket's all-reduce or reduce-scatter
  // during the last micro-batch's backward (of each model chunk, under
  // pipeline parallelism), --overlap-param-gather each bucket's all-gather
  // during the next forward (trainer/step.cpp).
  // Megatron's rules and words.
  if (overlap_param_gather && !use_distributed_optimizer)
    throw Error("--overlap-param-gather only supported with distributed optimizer; add --use-distributed-optimizer");
  if (overlap_param_gather && !overlap_grad_reduce)
    throw Error("Must use --overlap-param-gather with --overlap-grad-reduce; add --overlap-grad-reduce");
  if (check_weight_hash_interval < 0)
    throw Error("--check-weight-hash-across-dp-replicas-interval must not be negative");
  if (exit_duration_in_mins < 0) throw Error("--exit-duration-in-mins must not be negative");
  exit.finalize(f, save_trigger_file);
  // Now that the vocab size is final (padded for --tensor-model-parallel-size
  // with --data-path), check that the model splits over the ranks.
  model.tensor_parallel = tensor_model_parallel_size;
  // Megatron's rule and words: sequence parallelism needs tensor parallelism.
  if (sequence_parallel && tensor_model_parallel_size == 1)
    logger().warn("Disabling sequence parallelism because tensor model parallelism is disabled");
  model.sequence_parallel = sequence_parallel && tensor_model_parallel_size > 1;
  model.validate();
  check_pipeline_layout();
  finalize_recompute(f);
  check_tensor_sizes();
  check_resume_schedule(*this);  // last: it needs the final model and tokenizer
}

// What pipeline parallelism supports today; anything else is refused before
// any work, with the flag to drop.
void TrainConfig::check_pipeline_layout() const {
  const int64_t P = pipeline_model_parallel_size;
  if (P <= 0) throw Error("--pipeline-model-parallel-size must be positive, got " + std::to_string(P));
  const int64_t first = decoder_first_pipeline_num_layers, last = decoder_last_pipeline_num_layers;
  if (first < 0 || last < 0)
    throw Error("--decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers must be positive");
  if ((first > 0 || last > 0) && P == 1)
    throw Error(
        "--decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers need "
        "--pipeline-model-parallel-size 2 or more");
  check_virtual_pipeline();
  if (P == 1) return;
  const std::string pp = "--pipeline-model-parallel-size " + std::to_string(P);
  const std::string layers = "--num-layers " + std::to_string(model.num_layers);
  if (first == 0 && last == 0 && model.num_layers % P != 0)
    throw Error(layers + " is not divisible by " + pp +
                "; each stage holds an equal share of the layers (or set --decoder-first-pipeline-num-layers / "
                "--decoder-last-pipeline-num-layers)");
  // Megatron's uneven split: the stages without a given count share the rest evenly.
  const int64_t others = P - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  const int64_t rest = model.num_layers - first - last;
  if (rest < 0 || (others == 0 && rest != 0) || (others > 0 && (rest <= 0 || rest % others != 0)))
    throw Error(layers + " minus the first/last stage's layers leaves " + std::to_string(rest) + " for the other " +
                std::to_string(others) + " stages of " + pp +
                "; the left-over layers must split evenly, at least one per stage");
}

int64_t TrainConfig::stage_layers(int64_t stage) const {
  const int64_t P = pipeline_model_parallel_size;
  const int64_t first = decoder_first_pipeline_num_layers, last = decoder_last_pipeline_num_layers;
  if (stage == 0 && first > 0) return first;
  if (stage == P - 1 && last > 0) return last;
  const int64_t others = P - (first > 0 ? 1 : 0) - (last > 0 ? 1 : 0);
  return (model.num_layers - first - last) / others;
}

GptConfig TrainConfig::stage_model(int64_t stage) const {
  GptConfig m = model;
  const int64_t P = pipeline_model_parallel_size;
  if (P == 1) return m;
  if (virtual_chunks() > 1) return chunk_model(stage, 0);
  m.first_layer = 0;
  for (int64_t s = 0; s < stage; ++s) m.first_layer += stage_layers(s);
  m.end_layer = m.first_layer + stage_layers(stage);
  m.pre_process = stage == 0;
  m.post_process = stage == P - 1;
  return m;
}

void TrainConfig::check_tensor_sizes() const {
  // A step's graph holds every activation as one IR value, and the IR caps a
  // value at 2^40 elements (include/kiln/ir_decode.hpp). Say which flags make
  // a tensor too large here, rather than "IR value too large" later.
  const double B = static_cast<double>(micro_batch_size), T = static_cast<double>(model.seq_length);
  const double C = static_cast<double>(model.hidden_size), V = static_cast<double>(model.local_vocab());
  const double H = static_cast<double>(model.local_heads()),
               F = static_cast<double>(model.ffn_hidden() * (model.swiglu ? 2 : 1));
  struct Tensor {
    const char* what;
    double elements;
    const char* flags;
  };
  const Tensor largest[] = {
      {"the attention scores", B * H * T * T, "--micro-batch-size, --seq-length or --num-attention-heads"},
      {"the logits", B * T * V, "--micro-batch-size, --seq-length or --vocab-size"},
      {"the MLP activations", B * T * F, "--micro-batch-size, --seq-length, --hidden-size or --ffn-hidden-size"},
      {"the word embedding", V * C, "--vocab-size or --hidden-size"},
  };
  constexpr double kMaxElements = 1099511627776.0;  // 2^40
  for (const Tensor& t : largest)
    if (t.elements > kMaxElements) {
      char count[32];
      std::snprintf(count, sizeof count, "%.3g", t.elements);
      throw Error(std::string(t.what) + " would hold " + count + " elements (--micro-batch-size " +
                  std::to_string(micro_batch_size) + ", --seq-length " + std::to_string(model.seq_length) +
                  "), above kiln's 2^40 per tensor; lower " + t.flags);
    }
}

void TrainConfig::finalize_data() {
  if (tokenizer_spec.type.empty())
    throw Error(std::string("--data-path needs --tokenizer-type (") + data::kTokenizerTypes +
                ") with its files, the tokenizer the data was preprocessed with, as Megatron-LM");
  if (seed < 0 || seed > 0xFFFFFFFFll)
    throw Error("--seed " + std::to_string(seed) +
                " is outside [0, 2^32), which the data shuffle (numpy's "
                "RandomState, as Megatron) accepts");
  if (model.seq_length < 2) throw Error("--seq-length must be at least 2 with --data-path");
  std::vector<double> split_vec = data::parse_split(split);
  data::Blend blend = data::parse_blend(data_path);
  for (const std::string& prefix : blend.prefixes)
    for (const char* ext : {".idx", ".bin"})
      if (const std::string file = prefix + ext; !std::filesystem::exists(file)) {
        std::string message = "--data-path ";
        message += prefix;
        message += ": ";
        message += file;
        message +=
            " does not exist; pass the prefix of a Megatron .bin/.idx pair without the extension (kiln "
            "preprocess writes <output-prefix>_text_document.bin/.idx)";
        throw Error(message);
      }
  // As Megatron: a split with no validation share builds no validation
  // dataset, and training runs without evaluation (no error).
  if (eval_iters > 0 && !data::split_matrix(split_vec)[1]) {
    logger().info("validation is off: --split {} gives it no documents", split);
    eval_iters = 0;
  }
}

void TrainConfig::load_tokenizer(const Flags& f) {
  if (tokenizer_spec.type == "NullTokenizer") {
    if (!f.given("--vocab-size"))
      throw Error("--tokenizer-type NullTokenizer needs --vocab-size N, as Megatron (ids 0..N-1, EOD = N)");
    tokenizer_spec.vocab_size = model.vocab_size;
  }
  if (make_vocab_size_divisible_by <= 0) throw Error("--make-vocab-size-divisible-by must be positive");
  const int64_t flag_vocab = model.vocab_size;
  tokenizer = data::load_tokenizer(tokenizer_spec);
  // Megatron builds the model from the tokenizer's own vocabulary and reads
  // --vocab-size for NullTokenizer only; launch scripts pass it anyway
  // (NVIDIA's Llama-3 8B example, for both its data branches).
  if (tokenizer_spec.type != "NullTokenizer" && f.given("--vocab-size") && flag_vocab != tokenizer->vocab_size())
    logger().warn(
        "--vocab-size {} ignored: the vocabulary is --tokenizer-type {}'s {} ids (padded to a multiple of "
        "--make-vocab-size-divisible-by), as in Megatron",
        flag_vocab, tokenizer_spec.type, tokenizer->vocab_size());
  // Megatron's _vocab_size_with_padding.
  const int64_t multiple = make_vocab_size_divisible_by * tensor_model_parallel_size;
  model.vocab_size = (tokenizer->vocab_size() + multiple - 1) / multiple * multiple;
}

}  // namespace kiln::trainer
