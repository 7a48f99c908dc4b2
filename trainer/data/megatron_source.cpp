// The TokenSource behind --data-path: Megatron's train and validation
// datasets, sized as Megatron-LM's get_train_valid_test_num_samples.
#include <algorithm>
#include <sstream>

#include "core/error.h"
#include "core/log.h"
#include "trainer/data/gpt_dataset.h"
#include "trainer/data/token_source.h"
#include "trainer/train_config.h"

namespace kiln::trainer {

namespace {

class MegatronData : public TokenSource {
 public:
  explicit MegatronData(const TrainConfig& cfg) : vocab_(cfg.model.vocab_size), seq_length_(cfg.model.seq_length) {
    data::Blend blend = data::parse_blend(cfg.data_path);
    data::GptDatasetOptions opt;
    opt.seq_length = cfg.model.seq_length;
    opt.seed = static_cast<uint32_t>(cfg.seed);
    opt.cache_dir = cfg.data_cache_path;
    // Megatron's get_train_valid_test_num_samples: --train-samples as given
    // (or more, where a --rampup-batch-size or --step-batch-size-schedule
    // step ends past it, or its batches exceed --global-batch-size).
    int64_t train_samples = cfg.sample_based() ? cfg.train_samples : cfg.train_iters * cfg.global_batch_size;
    if (cfg.batch_varies()) train_samples = std::max(train_samples, cfg.consumed_after(cfg.train_iters));
    const int64_t valid_samples = (cfg.train_iters / cfg.eval_interval + 1) * cfg.eval_iters * cfg.global_batch_size;
    train_ = data::build_split_dataset(blend, cfg.split, data::DataSplit::Train, train_samples, opt);
    if (cfg.eval_iters > 0)
      valid_ = data::build_split_dataset(blend, cfg.split, data::DataSplit::Valid, valid_samples, opt);
    // Only an unweighted blend (one epoch of each prefix) can come up short.
    if (train_->size() < train_samples)
      throw Error("the unweighted --data-path blend has " + std::to_string(train_->size()) +
                  " train samples (one epoch of each prefix), but --train-iters x --global-batch-size needs " +
                  std::to_string(train_samples) +
                  "; give the prefixes weights (W1 PREFIX1 W2 PREFIX2 ...) "
                  "to draw more epochs");
    if (valid_ && valid_->size() < cfg.eval_iters * cfg.global_batch_size)
      throw Error("the validation split has " + std::to_string(valid_->size()) +
                  " samples, fewer than --eval-iters x "
                  "--global-batch-size; give the prefixes weights or lower --eval-iters");
    std::ostringstream d;
    d << "Megatron GPT dataset ";
    for (size_t i = 0; i < blend.prefixes.size(); ++i) {
      if (i) d << " ";
      if (!blend.weights.empty()) d << blend.weights[i] << " ";
      d << blend.prefixes[i];
    }
    d << " (split " << cfg.split << ", seed " << cfg.seed << ": " << train_->size() << " train samples";
    if (valid_) d << ", " << valid_->size() << " validation samples";
    d << ")";
    describe_ = d.str();
  }
  std::string describe() const override { return describe_; }
  void sample(Split split, int64_t index, int64_t T, int32_t* out) const override {
    if (T != seq_length_)
      throw Error("internal error: samples were built for --seq-length " + std::to_string(seq_length_));
    const data::SampleDataset* ds = split == Split::Train ? train_.get() : valid_.get();
    if (!ds) throw Error("no validation dataset was built (--eval-iters 0)");
    ds->sample(index, out);
    for (int64_t i = 0; i <= T; ++i)
      if (out[i] < 0 || out[i] >= vocab_)
        throw Error("token id " + std::to_string(out[i]) + " in " + ds->describe_token(index, i) + " (" +
                    (split == Split::Train ? "train" : "validation") + " sample " + std::to_string(index) +
                    ") is outside the vocabulary (" + std::to_string(vocab_) +
                    "): the .bin/.idx were made with another tokenizer; preprocess the data again with this run's "
                    "--tokenizer-type and files");
  }

 private:
  int64_t vocab_, seq_length_;
  std::shared_ptr<const data::SampleDataset> train_, valid_;
  std::string describe_;
};

}  // namespace

std::unique_ptr<TokenSource> make_megatron_data(const TrainConfig& cfg) { return std::make_unique<MegatronData>(cfg); }

}  // namespace kiln::trainer
