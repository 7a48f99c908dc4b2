// Everything a training run holds before its first step: the process groups,
// the device, the data, the compiled step graphs and the model state resident
// on the device (fresh or resumed from --load). Built in the order that
// reports a user's mistake (a backend typo, a checkpoint of another model)
// before any expensive work.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/fallback_device.h"
#include "graph/executor.h"
#include "trainer/checkpoint/save_lock.h"
#include "trainer/data/token_source.h"
#include "trainer/dist/comm.h"
#include "trainer/dist/gradient_sync.h"
#include "trainer/dist/group_collectives.h"
#include "trainer/fp8_state.h"
#include "trainer/loss_scaler.h"
#include "trainer/lr_schedule.h"
#include "trainer/model/document_inputs.h"
#include "trainer/model/model_state.h"
#include "trainer/model/run_graphs.h"
#include "trainer/parallel_layout.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

struct LoadedCheckpoint;  // trainer/checkpoint/checkpoint_io.h

// One micro-batch on the host, before it is written to a step graph.
struct Batch {
  std::vector<int32_t> tokens, targets;
  std::vector<float> token_mask;  // tensor parallelism only
  // The document flags' inputs, computed from the tokens (null without them).
  std::shared_ptr<const DocumentInputs> documents;
  // TrainConfig::weighs_tokens_globally(): the kept tokens of the whole
  // global batch (or evaluation) the loss weights divide by; 0: each
  // micro-batch's own.
  int64_t loss_tokens = 0;
};

// How far the run is; saved in and restored from checkpoint metadata.
struct Progress {
  int64_t iteration = 0, consumed = 0, skipped_total = 0, nan_total = 0;
  // The iteration the AdamW moments started from (0, or where --no-load-optim
  // gave fresh ones): bias correction counts the moments' own steps.
  int64_t optimizer_start = 0;
  // The dropout seed: --seed, or the saved one on resume (Megatron's RNG state).
  int64_t rng_seed = 0;
  // --fp16's loss scale (1 otherwise), saved with the optimizer state.
  LossScaleState loss_scale;
  // --fp8-format's scales and amax histories, saved with the optimizer state.
  Fp8State fp8;
};

// One model chunk's compiled step graphs. The first micro-batch of a step
// writes the gradients, later ones add.
struct ChunkSteps {
  GptConfig model;  // its layers
  std::unique_ptr<graph::Executable> first_micro_batch, next_micro_batch, grad_norm, optimizer, eval;
  std::unique_ptr<graph::Executable> stage_forward;  // a virtual stage before the last

  // Every executable above that this run compiled (nulls left out).
  std::vector<graph::Executable*> executables() const;
};

struct Setup {
  Setup(const TrainConfig& cfg, dist::Comm& comm);
  Setup(const Setup&) = delete;
  Setup& operator=(const Setup&) = delete;

  const TrainConfig& cfg;
  dist::Comm& comm;  // every rank
  Layout at;
  // This step's global batch and micro-batches per data-parallel rank (the
  // most, --global-batch-size's, until the first step): with
  // --rampup-batch-size they grow with the consumed samples.
  int64_t global_batch = 0, micro_batches = 1;
  // Gradients and losses are summed over every micro-batch of every
  // data-parallel rank.
  double batch_terms = 1;
  // Sets the three above for the step that begins now, from the consumed
  // samples (the compiled step graphs are the same for any count).
  void begin_step();

  // The groups: a tensor-parallel group shares a model replica, a
  // data-parallel group the same shard of every replica.
  std::unique_ptr<dist::Comm> tp_owned, dp_owned;
  dist::Comm* dp_group = nullptr;
  // Pipeline parallelism: the stages of this rank's pipeline (rank = stage),
  // and with a tied embedding the first and last stage's pair, which sums
  // the word embedding's gradient. Null without pipeline parallelism.
  std::unique_ptr<dist::Comm> pp_group, embedding_group;
  // What a graph's collectives run over, by the group each names: one per
  // dimension of the job's ParallelState, over that dimension's
  // communicator, or this rank alone where the dimension has size 1.
  std::vector<std::unique_ptr<graph::Collectives>> group_collectives;
  graph::ProcessGroups process_groups;
  GptConfig stage_model;  // this rank's part of the model (all of it without pipeline parallelism; chunk 0 interleaved)

  std::unique_ptr<Device> device;
  AttentionChoice attention;               // --attention-backend on this device (trainer/attention_backend.h)
  FallbackDevice fallback;                 // runs the ops the backend lacks; outlives the executables
  std::unique_ptr<SaveDirLock> save_lock;  // rank 0, with --save: this run is the directory's only writer
  std::unique_ptr<TokenSource> data;
  std::unique_ptr<LrSchedule> schedule;
  std::unique_ptr<LrSchedule> decoupled_schedule;  // --decoupled-lr only

  // The same list `kiln precompile` extracts (trainer/model/run_graphs.h),
  // compiled per model chunk: one chunk, or vp under the interleaved
  // schedule (all bound to the one ModelState holding every chunk's
  // parameters).
  std::unique_ptr<const RunGraphs> graphs;
  std::vector<ChunkSteps> chunks;

  std::unique_ptr<ModelState> state;  // resident on the device
  // The data-parallel gradient synchronisation: the all-reduce, or with
  // --use-distributed-optimizer (and DP > 1) its reduce-scatter and the
  // all-gather of parameters.
  std::unique_ptr<dist::GradientSync> gradient_sync;
  Progress progress;
  Batch batch;  // host staging, shared by training and evaluation

  // --overlap-param-gather leaves the last optimizer step's parameter
  // all-gather running into the next step's forward. Whatever else reads
  // the parameters (`before`: evaluation, a checkpoint, the weight hash, the
  // end of the run) completes it first; a no-op otherwise.
  void finish_parameter_gather(const std::string& before);

 private:
  // The constructor's steps, in its order.
  void join_process_groups();
  void name_process_groups(const ParallelState& parallel);
  void check_outputs();
  void open_data();
  void log_run() const;
  void compile_chunks();
  void make_model_state(const LoadedCheckpoint& resume);
  void make_gradient_sync();
};

// Writes a micro-batch to a step graph's inputs, as ids of this rank's
// vocab shard under tensor parallelism (a pipeline stage's graph takes the
// tokens on the first stage, the targets on the last).
void feed(graph::Executable& exe, Batch& batch, const GptConfig& model, const Layout& at);
// Fills one micro-batch with samples [first, first + B) of a split.
void fill_batch(const TokenSource& data, Split split, int64_t first, int64_t B, int64_t T, Batch& batch);
bool has_input(const graph::Executable& exe, const std::string& port);
float read_scalar(graph::Executable& exe, const std::string& port);

}  // namespace kiln::trainer
