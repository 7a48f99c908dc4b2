#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/error.h"
#include "trainer/checkpoint/checkpoint_io.h"

using namespace kiln::trainer;
namespace fs = std::filesystem;

namespace {

class CheckpointIo : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kiln_ckpt_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    save_ = (root_ / "save").string();
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::map<std::string, SafeTensor> model(float v) {
    return {{"embedding.word_embeddings.weight", SafeTensor::from_f32({2, 2}, {v, 1, 2, 3})},
            {"final_layernorm.bias", SafeTensor::from_f32({2}, {0, v})}};
  }
  static std::map<std::string, SafeTensor> optimizer(float v) {
    return {{"embedding.word_embeddings.weight.exp_avg", SafeTensor::from_f32({2, 2}, {v, v, v, v})},
            {"embedding.word_embeddings.weight.exp_avg_sq", SafeTensor::from_f32({2, 2}, {1, 1, 1, 1})},
            {"step", SafeTensor::from_i64({}, {7})}};
  }
  static nlohmann::json meta(int64_t it) {
    return {{"iteration", it},
            {"consumed_samples", it * 8},
            {"rng", std::vector<uint64_t>{1, 2, 0xffffffffffffffffULL, 4, 0, 0}},
            {"config", {{"num_layers", 2}, {"lr", 3e-4}}}};
  }

  static std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void write(const fs::path& p, const std::string& s) { std::ofstream(p, std::ios::binary) << s; }

  // Loading must fail with a one-line kiln::Error containing every needle.
  static void expect_load_error(const std::string& path, std::initializer_list<std::string> needles) {
    try {
      load_checkpoint(path);
      ADD_FAILURE() << "loaded " << path;
    } catch (const kiln::Error& e) {
      const std::string msg = e.what();
      for (const auto& n : needles) EXPECT_NE(msg.find(n), std::string::npos) << msg;
      EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
    }
  }

  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(save_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path root_;
  std::string save_;
};

void expect_same(const std::map<std::string, SafeTensor>& a, const std::map<std::string, SafeTensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [name, t] : a) {
    ASSERT_TRUE(b.count(name)) << name;
    EXPECT_EQ(t.dtype, b.at(name).dtype) << name;
    EXPECT_EQ(t.shape, b.at(name).shape) << name;
    EXPECT_EQ(t.data, b.at(name).data) << name;
  }
}

}  // namespace

TEST(CheckpointDirName, IsMegatronsSevenDigitName) {
  EXPECT_EQ(checkpoint_dir_name(0), "iter_0000000");
  EXPECT_EQ(checkpoint_dir_name(100), "iter_0000100");
  EXPECT_EQ(checkpoint_dir_name(12345678), "iter_12345678");
  EXPECT_THROW(checkpoint_dir_name(-1), kiln::Error);
}

TEST_F(CheckpointIo, SaveThenLoadRoundTrips) {
  save_checkpoint(save_, 100, model(0.5f), optimizer(0.25f), meta(100));
  EXPECT_EQ(read(fs::path(save_) / "latest_checkpointed_iteration.txt"), "100");
  EXPECT_EQ(entries(), (std::vector<std::string>{"iter_0000100", "latest_checkpointed_iteration.txt"}));
  for (const char* f : {"model.safetensors", "optimizer.safetensors", "meta.json"})
    EXPECT_TRUE(fs::exists(fs::path(save_) / "iter_0000100" / f)) << f;

  const LoadedCheckpoint c = load_checkpoint(save_);
  EXPECT_EQ(c.iteration, 100);
  EXPECT_EQ(fs::path(c.dir), fs::path(save_) / "iter_0000100");
  expect_same(c.model, model(0.5f));
  expect_same(c.optimizer, optimizer(0.25f));
  EXPECT_EQ(c.meta, meta(100));
}

TEST_F(CheckpointIo, LoadsAnIterationDirectoryDirectly) {
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  save_checkpoint(save_, 200, model(2), optimizer(2), meta(200));
  EXPECT_EQ(read(fs::path(save_) / "latest_checkpointed_iteration.txt"), "200");
  EXPECT_EQ(load_checkpoint(save_).iteration, 200);

  const LoadedCheckpoint c = load_checkpoint((fs::path(save_) / "iter_0000100").string());
  EXPECT_EQ(c.iteration, 100);
  expect_same(c.model, model(1));
}

TEST_F(CheckpointIo, RenamedDirectoryFallsBackToMetaIteration) {
  save_checkpoint(save_, 300, model(1), optimizer(1), meta(300));
  const fs::path copy = root_ / "my_copy";
  fs::rename(fs::path(save_) / "iter_0000300", copy);
  EXPECT_EQ(load_checkpoint(copy.string()).iteration, 300);
}

TEST_F(CheckpointIo, OverwritingAnIterationReplacesItWholly) {
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  auto m = model(9);
  m["extra"] = SafeTensor::from_i32({1}, {5});
  save_checkpoint(save_, 100, m, optimizer(9), meta(100));
  const LoadedCheckpoint c = load_checkpoint(save_);
  expect_same(c.model, m);
  expect_same(c.optimizer, optimizer(9));
  // No temp or set-aside directories left behind.
  EXPECT_EQ(entries(), (std::vector<std::string>{"iter_0000100", "latest_checkpointed_iteration.txt"}));
}

TEST_F(CheckpointIo, SaveFailureIsAKilnErrorAndLeavesNoTemp) {
  fs::create_directories(root_);
  write(root_ / "a_file", "x");
  EXPECT_THROW(save_checkpoint((root_ / "a_file").string(), 1, model(1), optimizer(1), meta(1)), kiln::Error);
  // A bad tensor fails before anything becomes visible.
  auto bad = model(1);
  bad["broken"] = SafeTensor{"F32", {3}, {0}};
  EXPECT_THROW(save_checkpoint(save_, 5, bad, optimizer(1), meta(5)), kiln::Error);
  EXPECT_TRUE(entries().empty());
}

TEST_F(CheckpointIo, MissingPathsNameThePathAndTheFix) {
  expect_load_error((root_ / "nope").string(), {"nope", "does not exist", "--load"});
  fs::create_directories(save_);
  expect_load_error(save_, {save_, "holds no checkpoint"});
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  fs::remove(fs::path(save_) / "latest_checkpointed_iteration.txt");
  expect_load_error(save_, {"iter_0000100", "point --load at one of them"});
}

// What --load treats as a first launch (warn and start from random): a
// missing or empty directory only. A file, iter_ directories without the
// latest file, or any checkpoint file are for load_checkpoint to judge.
TEST_F(CheckpointIo, HoldsNoCheckpointOnlyForMissingOrEmptyDirectories) {
  EXPECT_TRUE(holds_no_checkpoint((root_ / "nope").string()));
  fs::create_directories(save_);
  EXPECT_TRUE(holds_no_checkpoint(save_));
  write(fs::path(save_) / "unrelated.txt", "x");
  EXPECT_TRUE(holds_no_checkpoint(save_));
  write(root_ / "a_file", "x");
  EXPECT_FALSE(holds_no_checkpoint((root_ / "a_file").string()));
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  EXPECT_FALSE(holds_no_checkpoint(save_));
  EXPECT_FALSE(holds_no_checkpoint((fs::path(save_) / "iter_0000100").string()));
  fs::remove(fs::path(save_) / "latest_checkpointed_iteration.txt");
  EXPECT_FALSE(holds_no_checkpoint(save_));
}

TEST_F(CheckpointIo, GarbledLatestFile) {
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  const fs::path latest = fs::path(save_) / "latest_checkpointed_iteration.txt";
  for (const char* garbage : {"release", "", "12x", "-5", "abc\n\x01"}) {
    write(latest, garbage);
    expect_load_error(save_, {latest.string(), "iteration number"});
  }
  write(latest, " 100\n");  // surrounding whitespace is fine, as in Megatron
  EXPECT_EQ(load_checkpoint(save_).iteration, 100);
  write(latest, "150");
  expect_load_error(save_, {"iter_0000150", "does not exist"});
}

TEST_F(CheckpointIo, DamagedIterationDirectory) {
  save_checkpoint(save_, 100, model(1), optimizer(1), meta(100));
  const fs::path dir = fs::path(save_) / "iter_0000100";

  const std::string good_model = read(dir / "model.safetensors");
  write(dir / "model.safetensors", good_model.substr(0, good_model.size() - 3));
  expect_load_error(save_, {"checkpoint", "model.safetensors", "is corrupt", "--load"});
  write(dir / "model.safetensors", good_model);

  write(dir / "meta.json", "{\"iteration\": 100,");
  expect_load_error(save_, {"meta.json", "not valid JSON", "--load"});
  write(dir / "meta.json", "[1, 2]");
  expect_load_error(save_, {"meta.json", "not a JSON object"});
  write(dir / "meta.json", meta(100).dump());

  fs::remove(dir / "optimizer.safetensors");
  expect_load_error(save_, {"incomplete", "optimizer.safetensors", "is missing"});
}
