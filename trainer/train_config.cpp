#include "trainer/train_config.h"

#include <filesystem>

#include "core/error.h"
#include "trainer/lr_schedule.h"

namespace kiln::trainer {

void TrainConfig::register_flags(Flags& f) {
  f.add("--num-layers", &model.num_layers, "transformer layers");
  f.add("--hidden-size", &model.hidden_size, "hidden size");
  f.add("--num-attention-heads", &model.num_attention_heads, "attention heads (must divide hidden size)");
  f.add("--seq-length", &model.seq_length, "sequence length");
  f.add("--max-position-embeddings", &max_position_embeddings, "position table size (defaults to --seq-length)");
  f.add("--vocab-size", &model.vocab_size, "vocabulary size (byte-level default corpus: 256)");
  f.add("--micro-batch-size", &micro_batch_size, "sequences per micro-batch");
  f.add("--global-batch-size", &global_batch_size, "sequences per optimizer step (default: micro batch x DP)");
  f.add("--train-iters", &train_iters, "optimizer steps to train for");
  f.add("--tensor-model-parallel-size", &tensor_model_parallel_size, "tensor-parallel ranks");
  f.add("--lr", &lr, "peak learning rate");
  f.add("--min-lr", &min_lr, "learning rate at the end of decay");
  f.add("--lr-warmup-iters", &lr_warmup_iters, "linear warmup steps");
  f.add("--lr-decay-iters", &lr_decay_iters, "decay steps (default: --train-iters)");
  f.add("--lr-decay-style", &lr_decay_style, "constant | linear | cosine");
  f.add("--weight-decay", &weight_decay, "AdamW decoupled weight decay (not on biases/LayerNorm)");
  f.add("--clip-grad", &clip_grad, "clip the global gradient norm to this (0: off)");
  f.add("--adam-beta1", &adam_beta1, "AdamW beta1");
  f.add("--adam-beta2", &adam_beta2, "AdamW beta2");
  f.add("--adam-eps", &adam_eps, "AdamW epsilon");
  f.add("--init-method-std", &init_method_std, "std of the normal weight init");
  f.add("--seed", &seed, "random seed (initialisation and data order)");
  f.add("--save", &save, "checkpoint directory to write");
  f.add("--load", &load, "checkpoint directory (or iter_XXXXXXX dir) to resume from");
  f.add("--save-interval", &save_interval, "save every N steps (0: only at the end when --save is set)");
  f.add("--eval-interval", &eval_interval, "evaluate every N steps");
  f.add("--eval-iters", &eval_iters, "micro-batches per evaluation (0: no evaluation)");
  f.add("--log-interval", &log_interval, "print a log line every N steps");
  f.add("--mock-data", &mock_data, "random tokens, for benchmarks (needs --vocab-size)");
  f.add("--data-path", &data_path, "Megatron .bin/.idx prefix(es), optionally weighted");
  f.add("--split", &split, "train,valid,test proportions");
  f.add("--vocab-file", &vocab_file, "GPT-2 vocab.json");
  f.add("--merge-file", &merge_file, "GPT-2 merges.txt");
  f.add("--tokenizer-type", &tokenizer_type, "tokenizer (GPT2BPETokenizer)");
  f.add("--backend", &backend, "backend plugin name or path to a plugin .so");
  f.add("--device", &device, "device index within the backend");
  f.add("--num-threads", &num_threads, "CPU threads for host-CPU backends (0: all cores)");
  f.add("--metrics-file", &metrics_file, "append one JSON object per logged step to this file");
}

void TrainConfig::finalize(const Flags& f) {
  model.init_method_std = static_cast<float>(init_method_std);
  model.validate();
  if (max_position_embeddings == 0) max_position_embeddings = model.seq_length;
  if (max_position_embeddings != model.seq_length)
    throw Error("--max-position-embeddings " + std::to_string(max_position_embeddings) +
                " differs from --seq-length " + std::to_string(model.seq_length) +
                "; kiln sizes the position table to the sequence length, so set them equal");
  if (micro_batch_size <= 0) throw Error("--micro-batch-size must be positive");
  if (train_iters < 0) throw Error("--train-iters must not be negative");
  if (tensor_model_parallel_size != 1)
    throw Error("--tensor-model-parallel-size " + std::to_string(tensor_model_parallel_size) +
                " needs the distributed trainer, which this build does not have; use 1");
  if (global_batch_size == 0) global_batch_size = micro_batch_size * data_parallel_size;
  if (global_batch_size <= 0 || global_batch_size % (micro_batch_size * data_parallel_size) != 0)
    throw Error("--global-batch-size " + std::to_string(global_batch_size) +
                " is not divisible by --micro-batch-size " + std::to_string(micro_batch_size) +
                " x data-parallel size " + std::to_string(data_parallel_size) +
                "; make it a multiple of " + std::to_string(micro_batch_size * data_parallel_size));
  if (lr_decay_iters == 0) lr_decay_iters = train_iters;
  LrSchedule(lr, min_lr, lr_warmup_iters, lr_decay_iters, lr_decay_style);  // validates
  if (log_interval <= 0) throw Error("--log-interval must be positive");
  if (eval_interval <= 0) throw Error("--eval-interval must be positive");
  if (eval_iters < 0) throw Error("--eval-iters must not be negative");
  if (save_interval < 0) throw Error("--save-interval must not be negative");
  if (save_interval > 0 && save.empty()) throw Error("--save-interval needs --save DIR");
  if (clip_grad < 0) throw Error("--clip-grad must not be negative");
  if (!data_path.empty())
    throw Error("--data-path needs Megatron .bin/.idx support, which this build does not have yet; "
                "train on the embedded corpus (no data flags) or --mock-data");
  if (mock_data && !f.given("--vocab-size"))
    throw Error("--mock-data needs --vocab-size N (as Megatron's NullTokenizer)");
  if (!mock_data && model.vocab_size != 256)
    throw Error("--vocab-size " + std::to_string(model.vocab_size) +
                " needs --mock-data; the embedded corpus is byte-level (vocab 256)");
  if (!load.empty() && !std::filesystem::exists(load))
    throw Error("--load " + load + " does not exist; point it at a --save directory or an iter_XXXXXXX checkpoint");
  if (device < 0) throw Error("--device must not be negative");
}

}  // namespace kiln::trainer
