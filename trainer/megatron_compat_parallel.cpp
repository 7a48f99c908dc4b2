// Megatron flag rows: Parallelism and memory layouts kiln lacks.
// The rows follow trainer/megatron_compat_rows.h; tests/data/megatron_flags.txt lists every flag.
#include "trainer/megatron_compat_rows.h"

namespace kiln::trainer {

namespace {

using Arity = CompatArity;
using Kind = CompatKind;
using Value = CompatValue;

const char* const kFsdp =
    "kiln has no FSDP (fully sharded parameters); --use-distributed-optimizer shards the optimizer state (ZeRO-1)";
const char* const kGtp = "kiln has no weight-sharded tensor parallelism with rematerialization";
const char* const kNoCp = "kiln has no context parallelism (each rank holds whole sequences)";
const char* const kOffload =
    "kiln keeps parameters, optimizer state and activations on the device; CPU offloading is not available";
const char* const kReplication = "kiln has no in-memory checkpoint replication across ranks";

const CompatRowSpec kRows[] = {
    {"--account-for-embedding-in-pipeline-split", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln splits only the transformer layers over pipeline stages; counting the embedding as a layer is not available",
     ""},
    {"--account-for-loss-in-pipeline-split", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln splits only the transformer layers over pipeline stages; counting the loss as a layer is not available", ""},
    {"--activation-offload-fraction", Arity::One, Value::Number, "", Kind::Refused, kOffload, ""},
    {"--cp-comm-type", Arity::Many, Value::Text, "", Kind::Refused, kNoCp, ""},
    {"--cpu-offloading-num-layers", Arity::One, Value::Int, "", Kind::Refused, kOffload, ""},
    {"--cpu-offloading-retain-pinned-cpu-buffers", Arity::Switch, Value::None, "", Kind::Refused, kOffload, ""},
    {"--data-parallel-sharding-strategy", Arity::One, Value::Text, "no_shard,optim,optim_grads,optim_grads_params",
     Kind::Refused, kFsdp, ""},
    {"--ddp-average-in-collective", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln scales gradients itself; averaging inside the collective is not available", ""},
    {"--ddp-param-name-patterns-for-fp32-local-accumulation", Arity::Many, Value::Text, "", Kind::Refused,
     "kiln reduces fp32 main gradients; per-parameter accumulation modes are not available", ""},
    {"--ddp-reduce-scatter-with-fp32-accumulation", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln reduces fp32 main gradients; this bf16-with-fp32-accumulation mode is not available", ""},
    {"--decoder-num-layers", Arity::One, Value::Int, "", Kind::Refused,
     "kiln trains decoder-only GPT models; use --num-layers", ""},
    {"--decoder-seq-length", Arity::One, Value::Int, "", Kind::Refused,
     "kiln trains decoder-only GPT models; use --seq-length", ""},
    {"--delta-offload-bytes-across-pp-ranks", Arity::One, Value::Int, "", Kind::Refused, kOffload, ""},
    {"--distribute-saved-activations", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln does not shard recomputed layers' saved inputs over tensor-parallel ranks", ""},
    {"--distributed-timeout-seconds-after-init", Arity::One, Value::Int, "", Kind::Refused,
     "kiln has one --distributed-timeout-minutes; a second timeout after start-up is not available", ""},
    {"--enable-full-sharding-in-hsdp", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--encoder-num-layers", Arity::One, Value::Int, "", Kind::Refused,
     "kiln trains decoder-only GPT models; use --num-layers", ""},
    {"--encoder-seq-length", Arity::One, Value::Int, "", Kind::Refused,
     "kiln trains decoder-only GPT models; use --seq-length", ""},
    {"--fake-process-group", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln has no fake process group (one process standing in for a larger job)", ""},
    {"--fine-grained-activation-offloading", Arity::Switch, Value::None, "", Kind::Refused, kOffload, ""},
    {"--fine-grained-offloading-max-inflight-offloads", Arity::One, Value::Int, "", Kind::Refused, kOffload, ""},
    {"--fsdp-db-use-persist-buf-on-alloc-fail", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--fsdp-double-buffer", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--fsdp-manual-registration", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--gtp-expert-remat-nccl-ub", Arity::Switch, Value::None, "", Kind::Refused, kGtp, ""},
    {"--gtp-remat-nccl-ub", Arity::Switch, Value::None, "", Kind::Refused, kGtp, ""},
    {"--gtp-remat-opt-in-modules", Arity::Many, Value::Text, "", Kind::Refused, kGtp, ""},
    {"--gtp-remat-reduce-scatter-with-fp32-accumulation", Arity::Switch, Value::None, "", Kind::Refused, kGtp, ""},
    {"--hierarchical-context-parallel-sizes", Arity::Many, Value::Int, "", Kind::Refused, kNoCp, ""},
    {"--hybrid-context-parallel", Arity::Switch, Value::None, "", Kind::Refused, kNoCp, ""},
    {"--lazy-mpu-init", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln makes its process groups itself; lazy (external) initialization is not available", ""},
    {"--max-seqlen-per-dp-cp-rank", Arity::One, Value::Int, "", Kind::Refused, kNoCp, ""},
    {"--megatron-fsdp-enable-fine-grained-param-gather", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--megatron-fsdp-grad-comm-dtype", Arity::One, Value::Text, "fp32,fp16,bf16,auto", Kind::Refused, kFsdp, ""},
    {"--megatron-fsdp-main-grads-dtype", Arity::One, Value::Text, "fp32,bf16,fp16,auto", Kind::Refused, kFsdp, ""},
    {"--megatron-fsdp-main-params-dtype", Arity::One, Value::Text, "fp32,bf16,fp16,auto", Kind::Refused, kFsdp, ""},
    {"--megatron-fsdp-max-pool-double-buffer", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--megatron-fsdp-version", Arity::One, Value::Int, "1,2", Kind::Refused, kFsdp, ""},
    {"--microbatch-group-size-per-virtual-pipeline-stage", Arity::One, Value::Int, "", Kind::Refused,
     "kiln's interleaved schedule groups P micro-batches (Megatron's default); another group size is not available",
     ""},
    {"--min-offloaded-tensor-size", Arity::One, Value::Int, "", Kind::Refused, kOffload, ""},
    {"--mlp-chunks-for-training", Arity::One, Value::Int, "", Kind::Refused,
     "kiln computes the MLP in one piece; chunking it is not available", ""},
    {"--model-parallel-size", Arity::One, Value::Int, "", Kind::Refused,
     "no longer valid in Megatron; use --tensor-model-parallel-size", ""},
    {"--num-distributed-optimizer-instances", Arity::One, Value::Int, "", Kind::Refused, kFsdp, ""},
    {"--offload-modules", Arity::Many, Value::Text, "", Kind::Refused, kOffload, ""},
    {"--optimizer-cpu-offload", Arity::Switch, Value::None, "", Kind::Refused, kOffload, ""},
    {"--optimizer-offload-fraction", Arity::One, Value::Number, "", Kind::Refused, kOffload, ""},
    {"--outer-dp-sharding-strategy", Arity::One, Value::Text, "no_shard,optim", Kind::Refused, kFsdp, ""},
    {"--overlap-cpu-optimizer-d2h-h2d", Arity::Switch, Value::None, "", Kind::Refused, kOffload, ""},
    {"--pipeline-model-parallel-comm-backend", Arity::One, Value::Text, "nccl,ucc", Kind::Refused,
     "kiln's pipeline transfers use MPI; a backend choice is not available", ""},
    {"--pipeline-model-parallel-layout", Arity::One, Value::Text, "", Kind::Refused,
     "kiln places layers with --decoder-first/last-pipeline-num-layers; a layout string is not read", ""},
    {"--recompute-modules", Arity::Many, Value::Text, "", Kind::Refused,
     "kiln's --recompute-granularity selective recomputes a fixed part of attention; a module list is not available",
     ""},
    {"--replication", Arity::Switch, Value::None, "", Kind::Refused, kReplication, ""},
    {"--replication-factor", Arity::One, Value::Int, "", Kind::Refused, kReplication, ""},
    {"--replication-jump", Arity::One, Value::Int, "", Kind::Refused, kReplication, ""},
    {"--tensor-parallel-num-weight-shards", Arity::One, Value::Int, "", Kind::Refused, kGtp, ""},
    {"--torch-fsdp2-no-reshard-after-forward", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--use-megatron-fsdp", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--use-torch-fsdp2", Arity::Switch, Value::None, "", Kind::Refused, kFsdp, ""},
    {"--use-torch-optimizer-for-cpu-offload", Arity::Switch, Value::None, "", Kind::Refused, kOffload, ""},
    {"--use-tp-pp-dp-mapping", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln orders ranks tensor, data, pipeline (Megatron's default); the tp-pp-dp order is not available", ""},
};

}  // namespace

std::vector<CompatFlag> compat_parallel_rows() { return to_rows(kRows); }

}  // namespace kiln::trainer
