// Megatron flag rows: Data, tokenizer and checkpoint options.
// The rows follow trainer/megatron_compat_rows.h; tests/data/megatron_flags.txt lists every flag.
#include "trainer/megatron_compat_rows.h"

namespace kiln::trainer {

namespace {

using Arity = CompatArity;
using Kind = CompatKind;
using Value = CompatValue;

const char* const kCkptFormat =
    "kiln writes and reads its own checkpoint layout (docs/CHECKPOINTS.md); Megatron's distributed-checkpoint options "
    "are not available";
const char* const kFim = "kiln has no fill-in-the-middle (FIM) data transformation";
const char* const kSft = "kiln has no SFT (chat, packed-conversation) datasets; it trains on Megatron's GPT .bin/.idx";
const char* const kSplitPaths =
    "kiln splits one --data-path blend with --split; separate train, valid and test paths are not read";
const char* const kTokenizerOption =
    "kiln's tokenizers take --tokenizer-type, --vocab-file, --merge-file, --tokenizer-model and --vocab-size only; "
    "this option is not available";

const CompatRowSpec kRows[] = {
    {"--allow-ambiguous-pad-tokens", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln's GPT samples have no pad tokens", ""},
    {"--async-ckpt-cpu-priority", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--async-ckpt-io-priority", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--async-ckpt-use-cpu-shm", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--async-strategy", Arity::One, Value::Text, "nvrx,mcore", Kind::Refused, kCkptFormat, ""},
    {"--auto-detect-ckpt-format", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--chat-template", Arity::One, Value::Text, "", Kind::Refused, kTokenizerOption, ""},
    {"--ckpt-assume-constant-structure", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-convert-format", Arity::One, Value::Text, "torch,torch_dist", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-convert-save", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-convert-update-legacy-dist-opt-format", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-drop-redundant-extra-state", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-load", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-load-exchange-algo", Arity::One, Value::Text, "broadcast,gather_rounds,gather_object",
     Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-load-per-rank-objects", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-load-process-group", Arity::One, Value::Text, "dp,ep_dp", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-save", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-fully-parallel-save-process-group", Arity::One, Value::Text, "dp,ep_dp", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-pg-tensors-cache-create", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-pg-tensors-cache-path", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--ckpt-step", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--data-args-path", Arity::One, Value::Text, "", Kind::Refused, kSplitPaths, ""},
    {"--dataloader-defer-npy-index-mmap", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln builds and maps its dataset index cache itself; Megatron's loading options are not available", ""},
    {"--dataloader-fast-cache-load", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln builds and maps its dataset index cache itself; Megatron's loading options are not available", ""},
    {"--dataloader-inter-document-masking", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln attends across document boundaries within a sample (Megatron's default); masking between documents is not "
     "available",
     ""},
    {"--disable-ckpt-load-validate-sharding-integrity", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--disable-save-tokenizer-assets", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--disable-strict-fsdp-dtensor-load", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--disable-tokenizer-sentencepiece-ignore-extra-whitespaces", Arity::Switch, Value::None, "", Kind::Refused,
     kTokenizerOption, ""},
    {"--disable-use-tokenizer-model-from-checkpoint-args", Arity::Switch, Value::None, "", Kind::Refused,
     kTokenizerOption, ""},
    {"--dist-ckpt-format", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--dist-ckpt-optim-fully-reshardable", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--dist-ckpt-save-pre-mcore-014", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--dist-ckpt-strictness", Arity::One, Value::Text,
     "assume_ok_unexpected,log_unexpected,log_all,raise_unexpected,raise_all,return_unexpected,return_all,ignore_all",
     Kind::Refused, kCkptFormat, ""},
    {"--dist-ckpt-workers", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--distrib-optim-fully-reshardable-mem-efficient", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--enable-msc", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln reads local files; object storage (Multi-Storage Client) is not available", ""},
    {"--fim-data", Arity::Switch, Value::None, "", Kind::Refused, kFim, ""},
    {"--fim-eod-token", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-fragment-rate", Arity::One, Value::Number, "", Kind::Refused, kFim, ""},
    {"--fim-middle-token", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-no-prefix", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-pad-token", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-prefix-token", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-rate", Arity::One, Value::Number, "", Kind::Refused, kFim, ""},
    {"--fim-split-sample", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--fim-spm-rate", Arity::One, Value::Number, "", Kind::Refused, kFim, ""},
    {"--fim-suffix-token", Arity::One, Value::Text, "", Kind::Refused, kFim, ""},
    {"--full-validation", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln evaluates --eval-iters batches of the validation split; a full pass is not available", ""},
    {"--load-main-params-from-ckpt", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--mid-level-dataset-surplus", Arity::One, Value::Number, "", Kind::Refused,
     "kiln builds blends without Megatron's mid-level dataset surplus; another surplus is not available", ""},
    {"--multiple-validation-sets", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln evaluates one validation split of --data-path (--eval-iters)", ""},
    {"--no-ckpt-fully-parallel-save", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--no-ckpt-load-validate-sharding-integrity", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--no-data-sharding", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln always gives each data-parallel rank its own samples", ""},
    {"--no-save-tokenizer-assets", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--no-strict-fsdp-dtensor-load", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--no-tokenizer-sentencepiece-ignore-extra-whitespaces", Arity::Switch, Value::None, "", Kind::Refused,
     kTokenizerOption, ""},
    {"--no-use-tokenizer-model-from-checkpoint-args", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption,
     ""},
    {"--non-persistent-ckpt-type", Arity::One, Value::Text, "global,local,in_memory", Kind::Refused, kCkptFormat, ""},
    {"--non-persistent-global-ckpt-dir", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--non-persistent-local-ckpt-algo", Arity::One, Value::Text, "fully_parallel,atomic", Kind::Refused, kCkptFormat,
     ""},
    {"--non-persistent-local-ckpt-dir", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--non-persistent-save-interval", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--null-tokenizer-eod-id", Arity::One, Value::Int, "", Kind::Refused, kTokenizerOption, ""},
    {"--null-tokenizer-pad-id", Arity::One, Value::Int, "", Kind::Refused, kTokenizerOption, ""},
    {"--object-storage-cache-path", Arity::One, Value::Text, "", Kind::Refused,
     "kiln reads local files; object storage (Multi-Storage Client) is not available", ""},
    {"--override-ckpt-iteration", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--per-dataset-sequences-path", Arity::One, Value::Text, "", Kind::Refused,
     "kiln counts each dataset's sequences from its .idx; a precomputed count file is not read", ""},
    {"--per-split-data-args-path", Arity::One, Value::Text, "", Kind::Refused, kSplitPaths, ""},
    {"--persistent-save-interval", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--pretrained-checkpoint", Arity::One, Value::Text, "", Kind::Refused, kCkptFormat, ""},
    {"--save-retain-interval", Arity::One, Value::Int, "", Kind::Refused, kCkptFormat, ""},
    {"--sft", Arity::Switch, Value::None, "", Kind::Refused, kSft, ""},
    {"--sft-tokenizer-prompt-format", Arity::One, Value::Text, "", Kind::Refused, kSft, ""},
    {"--test-data-path", Arity::Many, Value::Text, "", Kind::Refused, kSplitPaths, ""},
    {"--tiktoken-num-special-tokens", Arity::One, Value::Int, "", Kind::Refused, kTokenizerOption, ""},
    {"--tokenizer-hf-no-include-special-tokens", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--tokenizer-hf-no-use-fast", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--tokenizer-metadata", Arity::One, Value::Text, "", Kind::Refused, kTokenizerOption, ""},
    {"--tokenizer-sentencepiece-legacy", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--tokenizer-special-tokens", Arity::Many, Value::Text, "", Kind::Refused, kTokenizerOption, ""},
    {"--train-data-path", Arity::Many, Value::Text, "", Kind::Refused, kSplitPaths, ""},
    {"--trust-remote-code", Arity::Switch, Value::None, "", Kind::Refused, kTokenizerOption, ""},
    {"--use-dist-ckpt", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--use-gigatoken", Arity::Switch, Value::None, "", Kind::Refused,
     "kiln has no GigaToken data format; it reads Megatron's .bin/.idx", ""},
    {"--use-mp-args-from-checkpoint-args", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--use-persistent-ckpt-worker", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
    {"--valid-data-path", Arity::Many, Value::Text, "", Kind::Refused, kSplitPaths, ""},
    {"--validation-set-names", Arity::Many, Value::Text, "", Kind::Refused,
     "kiln evaluates one validation split of --data-path (--eval-iters)", ""},
    {"--verify-integrity", Arity::Switch, Value::None, "", Kind::Refused, kCkptFormat, ""},
};

}  // namespace

std::vector<CompatFlag> compat_data_rows() { return to_rows(kRows); }

}  // namespace kiln::trainer
