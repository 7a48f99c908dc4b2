// Megatron flag rows: CUDA, NCCL and kernel tuning: the same computation in kiln, accepted with no effect.
// The rows follow trainer/megatron_compat_rows.h; tests/data/megatron_flags.txt lists every flag.
#include "trainer/megatron_compat_rows.h"

namespace kiln::trainer {

namespace {

using Arity = CompatArity;
using Kind = CompatKind;
using Value = CompatValue;

const char* const kBuckets =
    "the number of gradient buckets changes only how the all-reduce is split (kiln: --ddp-bucket-size); the sums are "
    "the same";
const char* const kCudaGraph =
    "CUDA graphs replay the same kernels with less launch overhead; kiln does not capture graphs and computes the same";
const char* const kNccl =
    "an NCCL or CUDA communication setting (buffers, SHARP, streams, groups); kiln's ranks use MPI and sum the same "
    "values";
const char* const kPipelineOrder2 =
    "a detail of when gradient reductions, parameter gathers or p2p transfers are issued; the values are the same";
const char* const kTpOverlap =
    "overlaps tensor-parallel communication with GEMMs through Transformer Engine userbuffers (CUDA); kiln's sums are "
    "the same without it";

const CompatRowSpec kRows[] = {
    {"--create-all-gather-group", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--cuda-graph-impl", Arity::One, Value::Text, "none,local,transformer_engine,full_iteration", Kind::NoEffect,
     kCudaGraph, ""},
    {"--cuda-graph-modules", Arity::Many, Value::Text, "", Kind::NoEffect, kCudaGraph, ""},
    {"--cuda-graph-scope", Arity::Many, Value::Text, "", Kind::NoEffect, kCudaGraph, ""},
    {"--cuda-graph-warmup-steps", Arity::One, Value::Int, "", Kind::NoEffect, kCudaGraph, ""},
    {"--ddp-num-buckets", Arity::One, Value::Int, "", Kind::NoEffect, kBuckets, ""},
    {"--ddp-pad-buckets-for-high-nccl-busbw", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--delay-offload-until-cuda-graph", Arity::Switch, Value::None, "", Kind::NoEffect, kCudaGraph, ""},
    {"--disable-align-grad-reduce", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--disable-clone-scatter-output-in-embedding", Arity::Switch, Value::None, "", Kind::NoEffect,
     "a PyTorch memory detail of the embedding under sequence parallelism; the values are the same", ""},
    {"--disable-gloo-process-groups", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--disable-jit-fuser", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
    {"--disable-manual-gc-eval", Arity::Switch, Value::None, "", Kind::NoEffect, kNoGc, ""},
    {"--disable-msc", Arity::Switch, Value::None, "", Kind::NoEffect,
     "kiln has no Multi-Storage Client, so there is nothing to turn off", ""},
    {"--disable-symmetric-registration", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--disable-tp-comm-bulk-dgrad", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--disable-tp-comm-bulk-wgrad", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--disable-tp-comm-overlap-ag", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--disable-tp-comm-overlap-rs", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--disable-tp-comm-split-ag", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--disable-tp-comm-split-rs", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--enable-cuda-graph", Arity::Switch, Value::None, "", Kind::NoEffect, kCudaGraph, ""},
    {"--external-cuda-graph", Arity::Switch, Value::None, "", Kind::NoEffect, kCudaGraph, ""},
    {"--flash-attention-version", Arity::One, Value::Int, "2,3,4", Kind::NoEffect, kOneAttention, ""},
    {"--fused-residual-rmsnorm", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
    {"--high-priority-stream-groups", Arity::Many, Value::Text, "", Kind::NoEffect, kNccl, ""},
    {"--local-rank", Arity::One, Value::Int, "", Kind::NoEffect,
     "passed by torch.distributed.launch; kiln takes each rank from MPI", ""},
    {"--nccl-communicator-config-path", Arity::One, Value::Text, "", Kind::NoEffect, kNccl, ""},
    {"--no-align-grad-reduce", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--no-align-param-gather", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--no-clone-scatter-output-in-embedding", Arity::Switch, Value::None, "", Kind::NoEffect,
     "a PyTorch memory detail of the embedding under sequence parallelism; the values are the same", ""},
    {"--no-gradient-reduce-div-fusion", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
    {"--no-one-logger", Arity::Switch, Value::None, "", Kind::NoEffect,
     "kiln has no one-logger, so there is nothing to turn off", ""},
    {"--no-overlap-p2p-communication", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--no-pin-cpu-grads", Arity::Switch, Value::None, "", Kind::NoEffect,
     "pinning applies to PyTorch FSDP2 CPU offload, which kiln does not do", ""},
    {"--no-pin-cpu-params", Arity::Switch, Value::None, "", Kind::NoEffect,
     "pinning applies to PyTorch FSDP2 CPU offload, which kiln does not do", ""},
    {"--no-tp-comm-bulk-dgrad", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--no-tp-comm-bulk-wgrad", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--no-tp-comm-overlap-ag", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--no-tp-comm-overlap-rs", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--no-tp-comm-split-ag", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--no-tp-comm-split-rs", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--optimizer-cuda-graph", Arity::Switch, Value::None, "", Kind::NoEffect, kCudaGraph, ""},
    {"--overlap-param-gather-with-optimizer-step", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--sharp-enabled-group", Arity::One, Value::Text, "dp,dp_replica", Kind::NoEffect, kNccl, ""},
    {"--suggested-communication-unit-size", Arity::One, Value::Int, "", Kind::NoEffect, kNccl, ""},
    {"--symmetric-ar-type", Arity::One, Value::Text, "two_shot,one_shot,multimem_all_reduce", Kind::NoEffect, kNccl,
     ""},
    {"--tensorboard-queue-size", Arity::One, Value::Int, "", Kind::NoEffect,
     "the TensorBoard writer's queue length; kiln writes the same events", ""},
    {"--tp-comm-bootstrap-backend", Arity::One, Value::Text, "nccl,mpi,gloo", Kind::NoEffect, kTpOverlap, ""},
    {"--tp-comm-overlap", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--tp-comm-overlap-cfg", Arity::One, Value::Text, "", Kind::NoEffect, kTpOverlap, ""},
    {"--tp-comm-overlap-rs-dgrad", Arity::Switch, Value::None, "", Kind::NoEffect, kTpOverlap, ""},
    {"--train-sync-interval", Arity::One, Value::Int, "", Kind::NoEffect,
     "synchronizes the CPU with the GPU every N steps; kiln's steps are synchronous and compute the same", ""},
    {"--use-grouped-gemm-for-dense-mlp", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
    {"--use-nccl-ub", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--use-ring-exchange-p2p", Arity::Switch, Value::None, "", Kind::NoEffect, kPipelineOrder2, ""},
    {"--use-sharp", Arity::Switch, Value::None, "", Kind::NoEffect, kNccl, ""},
    {"--use-te-activation-func", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
    {"--use-transformer-engine-op-fuser", Arity::Switch, Value::None, "", Kind::NoEffect, kOneKernel, ""},
};

}  // namespace

std::vector<CompatFlag> compat_perf_rows() { return to_rows(kRows); }

}  // namespace kiln::trainer
