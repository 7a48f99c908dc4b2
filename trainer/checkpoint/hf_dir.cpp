#include "trainer/checkpoint/hf_dir.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/error.h"
#include "core/log.h"
#include "core/regular_file.h"
#include "trainer/checkpoint/safetensors.h"
#include "trainer/data/stale_temporaries.h"
#include "trainer/data/stop_signals.h"

namespace kiln::trainer {

namespace fs = std::filesystem;

namespace {

void write_text(const fs::path& p, const std::string& text) {
  std::ofstream f(p, std::ios::binary);
  f << text;
  f.close();
  if (!f) throw Error("cannot write " + p.string());
}

const char* const kInputFix = "point --input at a Hugging Face model directory";

nlohmann::json read_json(const fs::path& p, const std::string& what) {
  std::error_code ec;
  if (!fs::exists(p, ec) && !fs::is_symlink(p, ec))
    throw Error("--input " + p.parent_path().string() + " has no readable " + what);
  const std::string text = read_input({p.string(), "--input", kInputFix, kMaxJsonConfigBytes});
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(p.string() + " is not valid JSON (" + e.what() + ")");
  }
}

std::map<std::string, SafeTensor> read_weights(const fs::path& file, const ExpectedTensors& needed) {
  try {
    return read_safetensors_subset(file.string(), needed).tensors;
  } catch (const SafetensorsError& e) {
    throw Error(file.string() + " is not valid safetensors: " + e.problem());
  } catch (const TensorShapeError& e) {
    throw Error(std::string(e.what()) + " (as config.json describes it); the weights and config.json disagree");
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + "; " + kInputFix);
  }
}

std::string shard_name(size_t i, size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

}  // namespace

int64_t parse_shard_size(const std::string& text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string unit = text.substr(digits);
  const std::map<std::string, int64_t> units = {{"", 1},
                                                {"B", 1},
                                                {"KB", 1000},
                                                {"MB", 1000'000},
                                                {"GB", 1000'000'000},
                                                {"KiB", 1024},
                                                {"MiB", 1024 * 1024},
                                                {"GiB", 1024 * 1024 * 1024}};
  auto u = units.find(unit);
  if (digits == 0 || digits > 12 || u == units.end())
    throw Error("--max-shard-size '" + text + "' is not a size; write e.g. 5GB, 200MB, 64MiB or a byte count");
  const int64_t n = std::stoll(text.substr(0, digits)) * u->second;
  if (n <= 0) throw Error("--max-shard-size must be positive, got '" + text + "'");
  return n;
}

void write_hf_dir(const std::string& dir, const HfDir& content, int64_t max_shard_bytes) {
  fs::path final(dir);
  std::string shown = dir;  // --output as messages name it
  std::error_code ec;
  if (fs::is_symlink(fs::symlink_status(final, ec))) {
    // The temporary is renamed onto --output: onto a link, that would fail
    // (a dangling one) or replace the link by a real directory beside it.
    std::error_code exists_ec;
    const bool exists = fs::exists(final, exists_ec);
    if (exists_ec.value() == ELOOP)
      throw Error("--output " + dir + " is a symbolic link loop; remove it or pick a new directory");
    if (!exists)
      throw Error("--output " + dir + " is a dangling symlink (to " + fs::read_symlink(final, ec).string() +
                  "); create the directory it points to, or remove the link");
    // A link to a directory, typically on a disk with room for the export:
    // write there (the temporary beside the target, renamed onto it), so
    // the export lands where the link points and the link stays.
    if (fs::is_directory(final, ec)) {
      const fs::path target = fs::canonical(final, ec);
      if (!ec) {
        final = target;
        shown = dir + " (a symlink to " + target.string() + ")";
      }
    }
  }
  if (fs::exists(final, ec) && !(fs::is_directory(final, ec) && fs::is_empty(final, ec)))
    throw Error("--output " + shown + " already exists; remove it or pick a new directory");
  const fs::path parent = final.has_parent_path() ? final.parent_path() : fs::path(".");
  const std::string tmp_stem = ".tmp_" + final.filename().string() + ".";
  const fs::path tmp = parent / (tmp_stem + std::to_string(::getpid()));
  // An export killed with kill -9 (or by a power cut) left its full-size
  // temporary; nothing else removes it (N38).
  const std::vector<std::string> stale = data::remove_dead_writers_entries(parent.string(), tmp_stem);
  if (!stale.empty())
    logger().info("--output {}: removed {} temporar{} left by an interrupted export (e.g. {})", shown, stale.size(),
                  stale.size() == 1 ? "y" : "ies", stale.front());
  try {
    data::throw_if_stop_requested();
    fs::create_directories(parent);
    fs::remove_all(tmp);
    fs::create_directory(tmp);
    // Shards, in name order.
    std::vector<std::map<std::string, SafeTensor>> shards(1);
    int64_t in_shard = 0, total = 0;
    for (const auto& [name, t] : content.tensors) {
      const auto bytes = static_cast<int64_t>(t.data.size());
      if (in_shard > 0 && in_shard + bytes > max_shard_bytes) {
        shards.emplace_back();
        in_shard = 0;
      }
      shards.back()[name] = t;
      in_shard += bytes;
      total += bytes;
    }
    const std::map<std::string, std::string> meta = {{"format", "pt"}};
    if (shards.size() == 1) {
      write_safetensors((tmp / "model.safetensors").string(), shards[0], meta);
      data::throw_if_stop_requested();
    } else {
      nlohmann::json weight_map = nlohmann::json::object();
      for (size_t i = 0; i < shards.size(); ++i) {
        write_safetensors((tmp / shard_name(i, shards.size())).string(), shards[i], meta);
        data::throw_if_stop_requested();  // SIGTERM, Ctrl-C: between shards, the temporary is removed below
        for (const auto& kv : shards[i]) weight_map[kv.first] = shard_name(i, shards.size());
      }
      nlohmann::json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
      write_text(tmp / "model.safetensors.index.json", index.dump(2) + "\n");
    }
    write_text(tmp / "config.json", content.config.dump(2) + "\n");
    if (content.generation_config.is_object())
      write_text(tmp / "generation_config.json", content.generation_config.dump(2) + "\n");
    for (const auto& [name, bytes] : content.files) write_text(tmp / name, bytes);
    data::throw_if_stop_requested();
    if (fs::exists(final)) fs::remove(final);  // the empty directory the check above allowed
    fs::rename(tmp, final);
  } catch (const data::StopRequested& stop) {
    fs::remove_all(tmp, ec);
    throw Error(std::string("kiln export: ") + stop.what() + "; removed its temporary " + tmp.string() +
                " and wrote nothing to --output " + shown);
  } catch (const std::exception& e) {
    fs::remove_all(tmp, ec);
    throw Error("cannot write --output " + shown + ": " + e.what() + "; check its parent exists and is writable");
  }
}

HfDir read_hf_dir(const std::string& dir, const TensorsNeeded& needed) {
  const fs::path root(dir);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) throw Error("--input " + dir + " is not a directory; point it at an HF model");
  if (!fs::exists(root / "config.json", ec))
    throw Error("--input " + dir + " has no config.json; point it at a Hugging Face model directory");
  HfDir out;
  out.config = read_json(root / "config.json", "config.json");
  if (!out.config.is_object()) throw Error((root / "config.json").string() + " is not a JSON object");
  const ExpectedTensors wanted = needed(out.config);
  if (fs::exists(root / "model.safetensors", ec)) {
    out.tensors = read_weights(root / "model.safetensors", wanted);
  } else if (fs::exists(root / "model.safetensors.index.json", ec)) {
    const nlohmann::json index = read_json(root / "model.safetensors.index.json", "model.safetensors.index.json");
    if (!index.contains("weight_map") || !index["weight_map"].is_object())
      throw Error((root / "model.safetensors.index.json").string() + " has no weight_map object");
    const auto& weight_map = index["weight_map"];
    // A tensor the index does not place is missing from every shard: say
    // so before reading gigabytes of the others.
    for (const auto& want : wanted)
      if (!weight_map.contains(want.first))
        throw Error((root / "model.safetensors.index.json").string() + " places no tensor " + want.first +
                    " in a shard, and config.json's model needs it; the model is incomplete");
    std::map<std::string, bool> files;
    for (const auto& [name, file] : weight_map.items()) {
      // "", "." and ".." name the directory itself or its parent: reading
      // them would blame the directory, not the index that named it.
      const std::string f = file.is_string() ? file.get<std::string>() : "";
      if (!file.is_string() || f.empty() || f == "." || f == ".." || f.find('/') != std::string::npos)
        throw Error((root / "model.safetensors.index.json").string() + " maps " + name + " to " +
                    (file.is_string() ? "'" + f + "'" : file.dump()) + ", not a file here");
      files[file.get<std::string>()] = true;
    }
    for (const auto& f : files)
      for (auto& [name, t] : read_weights(root / f.first, wanted)) out.tensors[name] = std::move(t);
  } else {
    throw Error("--input " + dir +
                " has no model.safetensors or model.safetensors.index.json (kiln reads safetensors)");
  }
  return out;
}

}  // namespace kiln::trainer
