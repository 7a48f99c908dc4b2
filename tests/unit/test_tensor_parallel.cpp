// Tensor parallelism without MPI: the shard arithmetic, the structure of
// the split GPT graphs (Megatron's all-reduces as graph nodes), the
// executor running collectives between compiled pieces, and a TP=2 train
// step -- two ranks as two threads meeting in an in-process group -- giving
// the TP=1 loss and gradients. tests/cli/mpi_tensor_parallel.sh does the
// same end to end under mpirun.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <tuple>

#include "core/registry.h"
#include "graph/autodiff.h"
#include "graph/executor.h"
#include "trainer/model/position_inputs.h"
#include "trainer/model/step_graphs.h"
#include "trainer/model/tensor_parallel.h"

namespace kiln::trainer {
namespace {

using graph::Graph;
using graph::ValueId;

ParamSpec spec_of(const GptConfig& cfg, const std::string& name) {
  for (const ParamSpec& s : gpt_parameters(cfg))
    if (s.name == name) return s;
  throw Error("no parameter " + name);
}

GptConfig small_model(int64_t tp) {
  GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 16;
  c.num_attention_heads = 4;
  c.vocab_size = 24;
  c.seq_length = 8;
  c.tensor_parallel = tp;
  return c;
}

TEST(TensorParallel, ShardsFollowMegatronsLayout) {
  const GptConfig c = small_model(2);
  const std::string L = "decoder.layers.0.";
  EXPECT_EQ(spec_of(c, "embedding.word_embeddings.weight").shape, (graph::Shape{12, 16}));
  EXPECT_EQ(spec_of(c, "embedding.position_embeddings.weight").shape, (graph::Shape{8, 16}));
  EXPECT_EQ(spec_of(c, L + "self_attention.linear_qkv.weight").shape, (graph::Shape{24, 16}));
  EXPECT_EQ(spec_of(c, L + "self_attention.linear_qkv.bias").shape, (graph::Shape{24}));
  EXPECT_EQ(spec_of(c, L + "self_attention.linear_proj.weight").shape, (graph::Shape{16, 8}));
  EXPECT_EQ(spec_of(c, L + "self_attention.linear_proj.bias").shape, (graph::Shape{16}));
  EXPECT_EQ(spec_of(c, L + "mlp.linear_fc1.weight").shape, (graph::Shape{32, 16}));
  EXPECT_EQ(spec_of(c, L + "mlp.linear_fc2.weight").shape, (graph::Shape{16, 32}));
  EXPECT_EQ(spec_of(c, L + "input_layernorm.weight").shape, (graph::Shape{16}));
  EXPECT_EQ(parameter_count(c), parameter_count(small_model(1)));
}

TEST(TensorParallel, TakeAndPutShardsByRowsAndColumns) {
  GptConfig c = small_model(2);
  c.hidden_size = 4;
  c.num_attention_heads = 2;
  const ParamSpec proj = spec_of(c, "decoder.layers.0.self_attention.linear_proj.weight");  // [4, 4], columns
  std::vector<float> full(16);
  for (size_t i = 0; i < full.size(); ++i) full[i] = static_cast<float>(i);
  EXPECT_EQ(take_shard(proj, full, 2, 1), (std::vector<float>{2, 3, 6, 7, 10, 11, 14, 15}));
  const ParamSpec qkv = spec_of(c, "decoder.layers.0.self_attention.linear_qkv.bias");  // [12], rows
  std::vector<float> bias(12);
  for (size_t i = 0; i < bias.size(); ++i) bias[i] = static_cast<float>(i);
  EXPECT_EQ(take_shard(qkv, bias, 2, 1), (std::vector<float>{6, 7, 8, 9, 10, 11}));
  // Every rank's part put back gives the tensor again.
  for (const ParamSpec& s : gpt_parameters(c)) {
    std::vector<float> t(static_cast<size_t>(graph::numel(s.full_shape)));
    for (size_t i = 0; i < t.size(); ++i) t[i] = static_cast<float>(i) * 0.5f;
    std::vector<float> back(t.size(), -1.0f);
    for (int64_t r = 0; r < 2; ++r) put_shard(s, take_shard(s, t, 2, r), back, 2, r);
    EXPECT_EQ(back, t) << s.name;
  }
}

TEST(TensorParallel, TokenIdsBecomeLocalOrOutOfShard) {
  std::vector<int32_t> ids{0, 1, 2, 3, 4, 5};
  shard_token_ids(ids, 3, 1);
  EXPECT_EQ(ids, (std::vector<int32_t>{3, 3, 3, 0, 1, 2}));
  std::vector<int32_t> inputs{0, 1, 2, 3, 4, 5};
  std::vector<float> mask(6);
  shard_input_ids(inputs, mask, 3, 1);
  EXPECT_EQ(inputs, (std::vector<int32_t>{0, 0, 0, 0, 1, 2}));
  EXPECT_EQ(mask, (std::vector<float>{0, 0, 0, 1, 1, 1}));
}

// A GPT-2-sized vocab shard must build and differentiate (a concat of
// unequal parts in the embedding once could not).
TEST(TensorParallel, LargeVocabTrainStepBuilds) {
  GptConfig c = small_model(2);
  c.vocab_size = 50304;
  Graph g = build_train_step(c, 1, GradMode::Overwrite);
  EXPECT_NE(g.find_input("token_mask"), nullptr);
}

int count_all_reduces(const Graph& g, int64_t reduction) {
  int n = 0;
  for (const graph::Node& node : g.nodes())
    if (node.op == KILN_OP_ALL_REDUCE && node.iattrs.at(0) == reduction) ++n;
  return n;
}

TEST(TensorParallel, TwoAllReducesPerLayerEachWay) {
  const GptConfig c = small_model(2);
  Graph eval = build_eval_step(c, 2);
  // Forward: the embedding, 2 per layer, the cross-entropy's max and sums.
  EXPECT_EQ(count_all_reduces(eval, 0), 1 + 2 * c.num_layers + 1);
  EXPECT_EQ(count_all_reduces(eval, 1), 1);
  // Backward adds 2 per layer and 1 for the LM head's input.
  Graph train = build_train_step(c, 2, GradMode::Overwrite);
  EXPECT_EQ(count_all_reduces(train, 0), 1 + 2 * c.num_layers + 1 + 2 * c.num_layers + 1);
  EXPECT_EQ(count_all_reduces(build_grad_norm(c), 0), 1);
  // Without tensor parallelism there are none.
  EXPECT_EQ(count_all_reduces(build_train_step(small_model(1), 2), 0), 0);
}

int count_ops(const Graph& g, kiln_op op) {
  int n = 0;
  for (const graph::Node& node : g.nodes()) n += node.op == op ? 1 : 0;
  return n;
}

// Sequence parallelism: each layer's 2 all-reduces become reduce-scatters
// and its 2 column-parallel inputs are gathered (and the LM head's), the
// embedding's output is scattered; backward mirrors each. The all-reduces
// left are the embedding's, the loss's, and the gradients of the
// replicated parameters applied to slices (2 norms of 2 each and 2
// row-parallel biases per layer, the final norm's 2).
TEST(TensorParallel, SequenceParallelGathersAndScattersAroundEachLayer) {
  GptConfig c = small_model(2);
  c.sequence_parallel = true;
  const int64_t L = c.num_layers;
  Graph eval = build_eval_step(c, 2);
  EXPECT_EQ(count_ops(eval, KILN_OP_ALL_GATHER), 2 * L + 1);
  EXPECT_EQ(count_ops(eval, KILN_OP_REDUCE_SCATTER), 2 * L);
  EXPECT_EQ(count_ops(eval, KILN_OP_SCATTER), 1);
  EXPECT_EQ(count_all_reduces(eval, 0), 1 + 1);
  Graph train = build_train_step(c, 2, GradMode::Overwrite);
  EXPECT_EQ(count_ops(train, KILN_OP_ALL_GATHER), (2 * L + 1) + 2 * L + 1);
  EXPECT_EQ(count_ops(train, KILN_OP_REDUCE_SCATTER), 2 * L + (2 * L + 1));
  EXPECT_EQ(count_ops(train, KILN_OP_SCATTER), 1);
  EXPECT_EQ(count_all_reduces(train, 0), 1 + 1 + L * (2 * 2 + 2) + 2);
}

// ---------------------------------------------------------------- executing collectives

// A process group of `size` threads in one process: a real all-reduce, the
// threads meeting at each call.
class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size) {}
  int size() const { return size_; }
  void all_reduce(std::span<float> data, Graph::Reduction r) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (failed_) throw Error("a peer of the thread group failed");
    const uint64_t round = round_;
    if (arrived_ == 0) {
      acc_.assign(data.begin(), data.end());
    } else {
      for (size_t i = 0; i < data.size(); ++i)
        acc_[i] = r == Graph::Reduction::Max ? std::max(acc_[i], data[i]) : acc_[i] + data[i];
    }
    if (++arrived_ == size_) {
      result_ = acc_;
      arrived_ = 0;
      ++round_;
      done_.notify_all();
    } else {
      done_.wait(lock, [&] { return round_ != round || failed_; });
      if (round_ == round) throw Error("a peer of the thread group failed");
    }
    std::copy(result_.begin(), result_.end(), data.begin());
  }
  // A member failed: the others stop waiting for it (as a rank's death
  // ends an MPI job) instead of hanging.
  void fail() {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    done_.notify_all();
  }

 private:
  const int size_;
  bool failed_ = false;
  std::mutex mutex_;
  std::condition_variable done_;
  int arrived_ = 0;
  uint64_t round_ = 0;
  std::vector<float> acc_, result_;
};

class GroupMember : public graph::Collectives {
 public:
  GroupMember(ThreadGroup& g, int rank) : group_(g), rank_(rank) {}
  void all_reduce(std::span<float> data, Graph::Reduction r) override { group_.all_reduce(data, r); }
  int rank() const override { return rank_; }
  int size() const override { return group_.size(); }

 private:
  ThreadGroup& group_;
  int rank_;
};

TEST(TensorParallel, ExecutorRunsCollectivesBetweenPieces) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  Graph g;
  ValueId x = g.input("x", KILN_F32, {3, 5});
  ValueId y = g.all_reduce(g.scale(x, 0.5f), KILN_GROUP_TP);
  g.output("z", g.gelu(y));
  g.output("m", g.all_reduce(y, KILN_GROUP_TP, Graph::Reduction::Max));  // a port made by a collective
  graph::Executable exe(*cpu, g);
  EXPECT_EQ(exe.split().collectives, 2);
  std::vector<float> in(15);
  for (size_t i = 0; i < in.size(); ++i) in[i] = static_cast<float>(i) - 7.0f;
  exe.buffer("x")->write(in.data(), 60);
  EXPECT_THROW(exe.run(), Error);  // no process group given

  // Two ranks with the same x: the sum is x itself, the max too.
  ThreadGroup group(2);
  GroupMember me(group, 0), peer(group, 1);
  graph::ProcessGroups groups;
  exe.set_process_groups(&groups);
  EXPECT_THROW(exe.run(), Error);  // no 'tp' group among them
  groups.set(KILN_GROUP_TP, &me);
  std::thread other([&] {
    std::vector<float> half(15);
    for (size_t i = 0; i < 15; ++i) half[i] = in[i] * 0.5f;
    peer.all_reduce(half, Graph::Reduction::Sum);
    peer.all_reduce(half, Graph::Reduction::Max);
  });
  exe.run();
  other.join();
  std::vector<float> z(15), m(15);
  exe.buffer("z")->read(z.data(), 60);
  exe.buffer("m")->read(m.data(), 60);
  for (size_t i = 0; i < 15; ++i) {
    const double v = in[i];
    EXPECT_NEAR(z[i], 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v))), 1e-5) << i;
    EXPECT_EQ(m[i], in[i]) << i;
  }
}

// Megatron's copy to the tensor-parallel region: x's gradient through the
// copy is all-reduced, its gradient through another use (a post-norm
// residual) is not; the executor removes the copy, so the forward is one
// piece with no collective, and the backward's all-reduce is the only one.
TEST(TensorParallel, CopyToRegionSumsOnlyTheCopiedUsesGradient) {
  Graph g;
  const ValueId x = g.input("x", KILN_F32, {2, 3});
  const ValueId w = g.input("w", KILN_F32, {3, 3});
  const ValueId y = g.matmul(g.copy_to_tp_region(x, KILN_GROUP_TP), w, false, true);
  const ValueId loss = g.sum_squares(g.add(y, x));
  const ValueId dx = graph::backward(g, loss, {x})[0];
  g.output("dx", dx);
  // dx = d(residual) + all_reduce(d(copy)): an ADD of a non-reduced and a reduced part.
  const graph::Node& sum = g.nodes()[static_cast<size_t>(g.value(dx).producer)];
  ASSERT_EQ(sum.op, KILN_OP_ADD);
  std::vector<kiln_op> makers;
  for (ValueId in : sum.inputs) makers.push_back(g.nodes()[static_cast<size_t>(g.value(in).producer)].op);
  EXPECT_EQ(std::count(makers.begin(), makers.end(), KILN_OP_ALL_REDUCE), 1);
  EXPECT_EQ(count_all_reduces(g, 0), 1);

  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  Graph forward;
  const ValueId fx = forward.input("x", KILN_F32, {2, 3});
  forward.output("y", forward.gelu(forward.copy_to_tp_region(fx, KILN_GROUP_TP)));
  graph::Executable exe(*cpu, forward);
  EXPECT_EQ(exe.split().collectives, 0);  // no process group needed
  const std::vector<float> in = {-2.0f, -1.0f, 0.0f, 0.5f, 1.0f, 3.0f};
  exe.buffer("x")->write(in.data(), 24);
  exe.run();
  std::vector<float> out(6);
  exe.buffer("y")->read(out.data(), 24);
  for (size_t i = 0; i < 6; ++i) {
    const double v = in[i];
    EXPECT_NEAR(out[i], 0.5 * v * (1 + std::tanh(0.7978845608 * (v + 0.044715 * v * v * v))), 1e-5) << i;
  }

  // A port naming the copy would lose its value: refused, saying what to output.
  Graph bad;
  bad.output("y", bad.copy_to_tp_region(bad.input("x", KILN_F32, {2}), KILN_GROUP_TP));
  try {
    graph::Executable refused(*cpu, bad);
    ADD_FAILURE() << "an output naming a copy was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("output the value it copies"), std::string::npos) << e.what();
  }
}

// Each collective runs over the group it names: the sum over 'tp' (two
// threads) sees the peer's values, the one over 'dp' (this rank alone, a
// dimension of size 1) does not. A group the run lacks is named.
TEST(TensorParallel, CollectivesRunOverTheGroupTheyName) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4});
  g.output("over_tp", g.all_reduce(g.scale(x, 1.0f), KILN_GROUP_TP));
  g.output("over_dp", g.all_reduce(g.scale(x, 2.0f), KILN_GROUP_DP));
  graph::Executable exe(*cpu, g);
  const std::vector<float> in = {1, 2, 3, 4};
  exe.buffer("x")->write(in.data(), 16);

  ThreadGroup tp(2);
  GroupMember me(tp, 0), peer(tp, 1);
  graph::SelfGroup alone;
  graph::ProcessGroups groups;
  groups.set(KILN_GROUP_TP, &me);
  groups.set(KILN_GROUP_DP, &alone);
  exe.set_process_groups(&groups);
  std::thread other([&] {
    std::vector<float> theirs = {10, 20, 30, 40};
    peer.all_reduce(theirs, Graph::Reduction::Sum);
  });
  exe.run();
  other.join();
  std::vector<float> over_tp(4), over_dp(4);
  exe.buffer("over_tp")->read(over_tp.data(), 16);
  exe.buffer("over_dp")->read(over_dp.data(), 16);
  EXPECT_EQ(over_tp, (std::vector<float>{11, 22, 33, 44}));
  EXPECT_EQ(over_dp, (std::vector<float>{2, 4, 6, 8}));
}

// A collective over a group the run was not given is refused, naming the
// group; one that names no kiln_group is refused where the node is made,
// as its other attributes are.
TEST(TensorParallel, CollectiveOverAMissingGroupIsNamed) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  Graph g;
  ValueId x = g.input("x", KILN_F32, {4});
  g.output("y", g.all_reduce(g.scale(x, 2.0f), KILN_GROUP_DP));
  graph::Executable exe(*cpu, g);
  exe.buffer("x")->write(std::vector<float>(4, 1.0f).data(), 16);
  graph::SelfGroup alone;
  graph::ProcessGroups groups;
  groups.set(KILN_GROUP_TP, &alone);
  exe.set_process_groups(&groups);
  try {
    exe.run();
    ADD_FAILURE() << "ran an all_reduce over a 'dp' group it was not given";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("all_reduce over process group 'dp'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(g.all_reduce(x, static_cast<kiln_group>(KILN_GROUP_COUNT_)), Error);
  // The largest value the enum type holds ([0, 7] for 0..KILN_GROUP_COUNT_);
  // a negative one would be undefined behaviour before kiln saw it.
  EXPECT_THROW(g.all_gather(x, 0, 2, static_cast<kiln_group>(7)), Error);
}

// Sequence parallelism's collectives through the executor, two ranks as
// threads: rank r holds x_r [2, 2, 3] (2 samples, its 2 of 4 tokens); the
// gather puts x_r at tokens [2r, 2r + 2) of each sample, the reduce-scatter
// of the gathered tensor (the same on both ranks) gives 2 x_r, and the
// scatter gives x_r back.
TEST(TensorParallel, ExecutorRunsSequenceParallelCollectives) {
  Graph g;
  ValueId x = g.input("x", KILN_F32, {2, 2, 3});
  ValueId whole = g.all_gather(x, 1, 2, KILN_GROUP_TP);
  g.output("whole", whole);
  g.output("summed", g.reduce_scatter(whole, 1, 2, KILN_GROUP_TP));
  g.output("mine", g.scatter(whole, 1, 2, KILN_GROUP_TP));
  ThreadGroup group(2);
  std::vector<float> in[2], wholes[2], summed[2], mine[2];
  // Each rank's device, opened before the threads start: the registry
  // loads a plugin from one thread at a time.
  std::unique_ptr<Device> devices[2] = {Registry::instance().open("cpu", 0, 1), Registry::instance().open("cpu", 0, 1)};
  auto run_rank = [&](int r) {
    try {
      graph::Executable exe(*devices[r], g);
      EXPECT_EQ(exe.split().collectives, 3);
      GroupMember me(group, r);
      graph::ProcessGroups groups;
      groups.set(KILN_GROUP_TP, &me);
      exe.set_process_groups(&groups);
      in[r].resize(12);
      for (size_t i = 0; i < 12; ++i) in[r][i] = 100.0f * static_cast<float>(r) + static_cast<float>(i);
      exe.buffer("x")->write(in[r].data(), 48);
      exe.run();
      for (auto [name, out, n] :
           {std::tuple{"whole", &wholes[r], 24}, {"summed", &summed[r], 12}, {"mine", &mine[r], 12}}) {
        out->resize(static_cast<size_t>(n));
        exe.buffer(name)->read(out->data(), static_cast<uint64_t>(n) * 4);
      }
    } catch (...) {
      group.fail();
      throw;
    }
  };
  std::thread other([&] { EXPECT_NO_THROW(run_rank(1)); });
  EXPECT_NO_THROW(run_rank(0));
  other.join();
  for (int r = 0; r < 2; ++r) {
    for (size_t b = 0; b < 2; ++b)
      for (size_t t = 0; t < 4; ++t)
        for (size_t c = 0; c < 3; ++c)
          EXPECT_EQ(wholes[r][(b * 4 + t) * 3 + c], in[t / 2][(b * 2 + t % 2) * 3 + c]) << r << b << t << c;
    for (size_t i = 0; i < 12; ++i) {
      EXPECT_EQ(summed[r][i], 2 * in[r][i]) << r << " " << i;
      EXPECT_EQ(mine[r][i], in[r][i]) << r << " " << i;
    }
  }
}

// ---------------------------------------------------------------- TP=2 == TP=1

struct StepResult {
  float loss = 0;
  std::map<std::string, std::vector<float>> grads;  // full tensors
};

std::vector<float> values(size_t n, uint32_t seed, float scale) {
  std::vector<float> v(n);
  uint32_t x = seed * 2654435761u + 7;
  for (float& f : v) {
    x = x * 1664525u + 1013904223u;
    f = scale * (static_cast<float>(x >> 8) / 16777216.0f - 0.5f);
  }
  return v;
}

// One train step of rank `rank` of `tp` on the full parameters `params`;
// writes the rank's part of each gradient into `out`.
void train_step(const GptConfig& c, int64_t rank, graph::Collectives* group,
                const std::map<std::string, std::vector<float>>& params, std::vector<int32_t> tokens,
                std::vector<int32_t> targets, StepResult& out) {
  std::unique_ptr<Device> cpu = Registry::instance().open("cpu", 0, 1);
  const int64_t B = 2;
  graph::Executable exe(*cpu, build_train_step(c, B, GradMode::Overwrite));
  graph::ProcessGroups groups;
  if (group) groups.set(KILN_GROUP_TP, group);
  exe.set_process_groups(&groups);
  for (const ParamSpec& s : gpt_parameters(c)) {
    std::vector<float> mine = take_shard(s, params.at(s.name), c.tensor_parallel, rank);
    exe.buffer(s.name)->write(mine.data(), mine.size() * 4);
  }
  if (c.tensor_parallel > 1) {
    std::vector<float> mask(tokens.size());
    shard_input_ids(tokens, mask, c.local_vocab(), rank);
    shard_token_ids(targets, c.local_vocab(), rank);
    exe.buffer("token_mask")->write(mask.data(), mask.size() * 4);
  }
  for (const auto& [name, input] : position_inputs(c, rank))
    exe.buffer(name)->write(input.values.data(), input.values.size() * 4);
  exe.buffer("tokens")->write(tokens.data(), tokens.size() * 4);
  exe.buffer("targets")->write(targets.data(), targets.size() * 4);
  exe.run();
  exe.buffer("loss")->read(&out.loss, 4);
  for (const ParamSpec& s : gpt_parameters(c)) {
    std::vector<float> mine(static_cast<size_t>(graph::numel(s.shape)));
    exe.buffer(grad_name(s.name))->read(mine.data(), mine.size() * 4);
    auto& full = out.grads[s.name];
    full.resize(static_cast<size_t>(graph::numel(s.full_shape)));
    put_shard(s, mine, full, c.tensor_parallel, rank);
  }
}

void expect_two_ranks_match_one(const GptConfig& model) {
  GptConfig one = model, two = model;
  one.tensor_parallel = 1;
  two.tensor_parallel = 2;
  std::map<std::string, std::vector<float>> params;
  uint32_t seed = 1;
  for (const ParamSpec& s : gpt_parameters(one))
    params[s.name] = values(static_cast<size_t>(graph::numel(s.full_shape)), seed++, 0.5f);
  std::vector<int32_t> tokens(16), targets(16);
  for (size_t i = 0; i < 16; ++i) {
    tokens[i] = static_cast<int32_t>((i * 7 + 3) % 24);
    targets[i] = static_cast<int32_t>((i * 5 + 11) % 24);
  }
  StepResult want;
  train_step(one, 0, nullptr, params, tokens, targets, want);

  ThreadGroup group(2);
  GroupMember m0(group, 0), m1(group, 1);
  StepResult r0, r1;
  std::string errors[2];
  auto rank = [&](int64_t r, GroupMember* m, StepResult* out) {
    try {
      train_step(two, r, m, params, tokens, targets, *out);
    } catch (const std::exception& e) {
      errors[r] = e.what();
      group.fail();
    }
  };
  std::thread rank1(rank, 1, &m1, &r1);
  rank(0, &m0, &r0);
  rank1.join();
  ASSERT_EQ(errors[0] + errors[1], "");

  EXPECT_EQ(r0.loss, r1.loss);  // every rank of the group holds the whole loss
  EXPECT_NEAR(r0.loss, want.loss, 1e-5 * std::abs(want.loss));
  for (const ParamSpec& s : gpt_parameters(two)) {
    const std::vector<float>& w = want.grads.at(s.name);
    double err = 0, norm = 0;
    for (size_t i = 0; i < w.size(); ++i) {
      // Shards: each rank wrote its part; replicated: both hold all of it.
      const float got = s.shard_dim >= 0 ? r0.grads.at(s.name)[i] + r1.grads.at(s.name)[i] : r0.grads.at(s.name)[i];
      if (s.shard_dim < 0) {
        EXPECT_EQ(r0.grads.at(s.name)[i], r1.grads.at(s.name)[i]) << s.name;
      }
      err += (got - w[i]) * (got - w[i]);
      norm += static_cast<double>(w[i]) * w[i];
    }
    EXPECT_LE(err, 1e-10 * norm + 1e-20) << s.name << ": gradient NMSE " << err / norm;
  }
}

// Llama's options split over two ranks: one query group of 2 heads each
// (Megatron-core's per-group QKV rows), SwiGLU's fc1 as each rank's rows of
// gate and of up, the untied output layer vocab-parallel, RMSNorm and
// QK-LayerNorm replicated, no biases, RoPE tables on every rank.
GptConfig llama_like(GptConfig c) {
  c.normalization = Normalization::RMSNorm;
  c.num_query_groups = 2;
  c.untie_embeddings_and_output_weights = true;
  c.add_bias_linear = false;
  c.qk_layernorm = true;
  c.position_embedding_type = PositionEmbedding::Rope;
  c.swiglu = true;
  c.ffn_hidden_size = 24;  // [gate; up] of 12 rows per rank
  return c;
}

TEST(TensorParallel, TwoRanksGiveTheSingleRankLossAndGradients) { expect_two_ranks_match_one(small_model(1)); }

// Sequence parallelism: norms and residual adds on each rank's half of the
// sequence, the replicated parameters' gradients summed over the group;
// GPT-2's learned positions (the scattered embedding) and Llama's options.
TEST(TensorParallel, SequenceParallelGivesTheSingleRankLossAndGradients) {
  GptConfig c = small_model(1);
  c.sequence_parallel = true;
  expect_two_ranks_match_one(c);
  c = llama_like(small_model(1));
  c.sequence_parallel = true;
  expect_two_ranks_match_one(c);
}

TEST(TensorParallel, LlamaLikeOptionsGiveTheSingleRankLossAndGradients) {
  expect_two_ranks_match_one(llama_like(small_model(1)));
}

// MPT's options over two ranks: each holds the ALiBi slopes of its heads.
TEST(TensorParallel, MptLikeOptionsGiveTheSingleRankLossAndGradients) {
  GptConfig c = small_model(1);
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.add_bias_linear = false;
  c.qk_layernorm = true;
  c.clip_qkv = 2.0f;
  expect_two_ranks_match_one(c);
}

// HF MPT's MLP and norms over two ranks: the exact GELU on each rank's fc1
// columns, and LayerNorms whose zero beta is a constant, not a parameter.
TEST(TensorParallel, ExactGeluAndBiasFreeLayerNormGiveTheSingleRankLossAndGradients) {
  GptConfig c = small_model(1);
  c.position_embedding_type = PositionEmbedding::Alibi;
  c.add_bias_linear = false;
  c.add_bias_layernorm = false;
  c.exact_gelu = true;
  expect_two_ranks_match_one(c);
}

}  // namespace
}  // namespace kiln::trainer
