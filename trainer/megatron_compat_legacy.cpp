// Megatron flag rows: flags that left Megatron's arguments.py before the
// commit of tests/data/megatron_flags.txt but that launch scripts still pass
// (AWS's, NVIDIA's older examples, forks). Each reason names the commit that
// removed the flag, so the row says what the flag did when it existed.
// The rows follow trainer/megatron_compat_rows.h.
#include "trainer/megatron_compat_rows.h"

namespace kiln::trainer {

namespace {

using Arity = CompatArity;
using Kind = CompatKind;
using Value = CompatValue;

const CompatRowSpec kRows[] = {
    {"--log-batch-size-to-tensorboard", Arity::Switch, Value::None, "", Kind::NoEffect,
     "kiln writes the global batch size to TensorBoard ('batch-size') in every --tensorboard-dir run, as Megatron "
     "has since it removed this flag (07659f9f09, 2024-07-26)",
     ""},
    {"--no-log-learnig-rate-to-tensorboard", Arity::Switch, Value::None, "", Kind::NotProvided,
     "kiln writes the learning rate to TensorBoard in every --tensorboard-dir run; this flag (so spelt, removed in "
     "07659f9f09, 2024-07-26) turned that off in Megatron",
     ""},
    {"--DDP-impl", Arity::One, Value::Text, "local,torch", Kind::NoEffect,
     "picked Megatron's or torch's DistributedDataParallel wrapper (removed in 3fb3e95ec6, 2023-09-05); both average "
     "the gradients over the data-parallel ranks, as kiln does",
     ""},
    {"--no-async-tensor-model-parallel-allreduce", Arity::Switch, Value::None, "", Kind::NoEffect,
     "stopped overlapping the tensor-parallel all-reduce with the weight-gradient GEMM (removed in 639c08ab82, "
     "2026-01-30); overlapping or not changes speed, not the result",
     ""},
    {"--no-scatter-gather-tensors-in-pipeline", Arity::Switch, Value::None, "", Kind::NoEffect,
     "turned off splitting pipeline messages over the tensor-parallel ranks, and was unused when Megatron removed it "
     "(10e7b74597, 2026-04-04); a stage receives the same values either way",
     ""},
    {"--distribute-checkpointed-activations", Arity::Switch, Value::None, "", Kind::Refused,
     "the old name of --distribute-saved-activations (renamed in bbab79f869, 2022-05-16): kiln does not shard "
     "recomputed layers' saved inputs over tensor-parallel ranks",
     ""},
    {"--use-legacy-models", Arity::Switch, Value::None, "", Kind::NoEffect,
     "picked Megatron's legacy GPT model over megatron-core's (removed in 39ec5ebeb4, 2026-05-06); both compute the "
     "same architecture, and kiln has one model implementation (megatron-core's parameter names)",
     ""},
    {"--no-query-key-layer-scaling", Arity::Switch, Value::None, "", Kind::NoEffect,
     "turned off query-key layer scaling, which Megatron applied by default until 94a3749f87 (2023-11-02) made it "
     "opt-in and removed this flag; kiln scales only with --apply-query-key-layer-scaling",
     ""},
    {"--mmap-warmup", Arity::Switch, Value::None, "", Kind::NoEffect,
     "read the .bin files once at start-up to warm the page cache (removed in a0e190ca4c, 2023-10-26); that changes "
     "start-up time, not the data",
     ""},
};

}  // namespace

std::vector<CompatFlag> compat_legacy_rows() { return to_rows(kRows); }

}  // namespace kiln::trainer
