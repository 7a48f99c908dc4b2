#include "trainer/checkpoint/checkpoint_io.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <vector>

#include "core/error.h"
#include "core/regular_file.h"
#include "trainer/checkpoint/model_config.h"
#include "trainer/data/stop_signals.h"
#include "trainer/fp8_state.h"

namespace kiln::trainer {
namespace fs = std::filesystem;

namespace {

const char* const kLoadFix = "; re-save it or point --load at another checkpoint";
const char* const kPointerFix = "write the iteration number into it or point --load at an iter_XXXXXXX directory";

[[noreturn]] void sys_error(const std::string& what, const fs::path& p) {
  throw Error("cannot " + what + " " + p.string() + ": " + std::strerror(errno));
}

// fsync works through a read-only descriptor on Linux, and opening the
// directory itself is the only way to make a rename or create durable.
void fsync_path(const fs::path& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC | (directory ? O_DIRECTORY : 0));  // not an input: fsync
  if (fd < 0) sys_error("open", p);
  const int rc = ::fsync(fd);
  const int saved = errno;
  ::close(fd);
  errno = saved;
  if (rc != 0) sys_error("fsync", p);
}

void write_file_synced(const fs::path& p, const std::string& content) {
  std::FILE* f = std::fopen(p.c_str(), "wb");
  if (!f) sys_error("create", p);
  const bool ok = std::fwrite(content.data(), 1, content.size(), f) == content.size() && std::fflush(f) == 0 &&
                  ::fsync(::fileno(f)) == 0;
  const int saved = errno;
  if (std::fclose(f) != 0 || !ok) {
    if (!ok) errno = saved;
    sys_error("write", p);
  }
}

// Swaps two existing paths atomically where the kernel can, so a crash never
// leaves the iteration directory missing; returns false where unsupported.
bool exchange(const fs::path& a, const fs::path& b) {
#ifdef RENAME_EXCHANGE
  if (::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0) return true;
  if (errno != EINVAL && errno != ENOSYS && errno != ENOTSUP) sys_error("replace", b);
#else
  (void)a;
  (void)b;
#endif
  return false;
}

void publish_dir(const fs::path& tmp, const fs::path& final, const fs::path& root) {
  if (!fs::exists(final)) {
    fs::rename(tmp, final);
    fsync_path(root, true);
    return;
  }
  if (exchange(tmp, final)) {
    fsync_path(root, true);
    fs::remove_all(tmp);  // now holds the replaced checkpoint
    return;
  }
  fs::path aside = final;
  aside.replace_filename(".old_" + final.filename().string() + "." + std::to_string(::getpid()));
  fs::remove_all(aside);
  fs::rename(final, aside);
  try {
    fs::rename(tmp, final);
  } catch (...) {
    fs::rename(aside, final);
    throw;
  }
  fsync_path(root, true);
  fs::remove_all(aside);
}

std::string printable(const std::string& s) {
  std::string out;
  for (char c : s) out += (c >= 0x20 && c < 0x7f) ? c : '?';
  return out;
}

enum class Parsed { Ok, NotANumber, TooLarge };

// Strict non-negative decimal: "12x", "-3", "" and "release" are all refused;
// digits past what int64_t holds are TooLarge, not silently another number.
Parsed parse_iteration_text(std::string s, int64_t& out) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return Parsed::NotANumber;
  s = s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return Parsed::NotANumber;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec == std::errc::result_out_of_range) return Parsed::TooLarge;
  return ec == std::errc() && ptr == s.data() + s.size() ? Parsed::Ok : Parsed::NotANumber;
}

bool parse_iteration(const std::string& s, int64_t& out) { return parse_iteration_text(s, out) == Parsed::Ok; }

bool iteration_from_dir_name(const std::string& name, int64_t& out) {
  return name.rfind("iter_", 0) == 0 && name.size() > 5 && parse_iteration(name.substr(5), out) &&
         name.find_first_not_of("0123456789", 5) == std::string::npos;
}

std::string list_iter_dirs(const fs::path& root) {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(root, ec)) {
    int64_t it;
    if (e.is_directory(ec) && iteration_from_dir_name(e.path().filename().string(), it))
      names.push_back(e.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  std::string out;
  for (size_t i = 0; i < names.size() && i < 5; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > 5) out += ", ...";
  return out;
}

std::map<std::string, SafeTensor> load_tensors(const fs::path& file, const ExpectedTensors* expected) {
  std::map<std::string, SafeTensor> tensors;
  try {
    tensors = read_safetensors(file.string(), expected).tensors;
  } catch (const SafetensorsError& e) {
    throw Error("checkpoint " + file.string() + " is corrupt: " + e.problem() + kLoadFix);
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + kLoadFix);
  }
  // kiln saves the tensors of its model as F32 only (ModelState): another
  // dtype in a known model's file was edited or written by another tool,
  // and would otherwise fail later naming neither tensor nor file.
  if (expected)
    for (const auto& [name, t] : tensors)
      if (t.dtype != "F32")
        throw Error("checkpoint " + file.string() + " tensor '" + name + "' has dtype " + t.dtype +
                    ", but kiln saves F32" + kLoadFix);
  return tensors;
}

// Model parameters that are NaN or infinite: a save refuses them
// (Checkpointer), so they come from a damaged or hand-made file, and would
// surface only as skipped steps or as garbage output (generate) much later.
void check_finite(const fs::path& file, const std::map<std::string, SafeTensor>& tensors) {
  std::string found;
  size_t tensors_bad = 0;
  for (const auto& [name, t] : tensors) {
    if (t.dtype != "F32") continue;
    // Read in place, not through to_f32(): no second copy of a large model.
    const size_t values = t.data.size() / sizeof(float);
    size_t bad = 0;
    for (size_t i = 0; i < values; ++i) {
      float x = 0;
      std::memcpy(&x, t.data.data() + i * sizeof(float), sizeof(float));
      bad += std::isfinite(x) ? 0 : 1;
    }
    if (bad == 0) continue;
    if (++tensors_bad <= 3)
      found += (found.empty() ? "" : ", ") +
               ("'" + name + "' (" + std::to_string(bad) + " of " + std::to_string(values) + " values)");
  }
  if (tensors_bad == 0) return;
  if (tensors_bad > 3) found += " and " + std::to_string(tensors_bad - 3) + " more tensors";
  throw Error("checkpoint " + file.string() + " holds NaN or infinite parameters: " + found +
              "; nothing can be trained or sampled from them: point --load at an earlier checkpoint");
}

// The model and optimizer tensors of the model in meta.json's "config",
// as ModelState saves them; false when there is no usable config (the
// callers that need one refuse the checkpoint then, naming the key).
bool expected_tensors(const nlohmann::json& meta, ExpectedTensors& model, ExpectedTensors& optimizer,
                      const std::string& dir) {
  auto config = meta.find("config");
  if (config == meta.end() || !config->is_object()) return false;
  std::vector<ParamSpec> params;
  try {
    params = gpt_parameters(GptConfig(model_config_from_json(*config)));
  } catch (const std::exception&) {
    return false;
  }
  for (const ParamSpec& p : params) {
    model[p.name] = p.full_shape;
    optimizer[p.name + ".exp_avg"] = p.full_shape;
    optimizer[p.name + ".exp_avg_sq"] = p.full_shape;
  }
  // The FP8 scaling state of a delayed-recipe run (trainer/fp8_state.h).
  const nlohmann::json* fp8 = nullptr;
  if (auto opt = meta.find("optimizer"); opt != meta.end() && opt->is_object())
    if (auto f = opt->find("fp8"); f != opt->end() && f->is_object()) fp8 = &*f;
  if (fp8 != nullptr) {
    const auto len = fp8->find("amax_history_len");
    if (len == fp8->end() || !len->is_number_unsigned() || len->get<uint64_t>() < 1 ||
        len->get<uint64_t>() > (uint64_t{1} << 30))
      throw Error("checkpoint " + dir +
                  "/meta.json: 'optimizer.fp8.amax_history_len' is not a positive integer; "
                  "the checkpoint is corrupt, re-save it or point --load at another");
    for (const auto& [name, shape] :
         Fp8State::checkpoint_tensors(len->get<int64_t>(), GptConfig(model_config_from_json(*config))))
      optimizer[name] = shape;
  }
  return true;
}

}  // namespace

void check_save_dir(const std::string& save_dir) {
  const fs::path dir(save_dir);
  const std::string fix = "; point --save at a directory this user can write";
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw Error("--save " + save_dir + " is not a directory" + fix);
  fs::create_directories(dir, ec);
  if (ec) throw Error("--save " + save_dir + ": cannot create it (" + ec.message() + ")" + fix);
  const fs::path probe = dir / (".kiln_write_probe." + std::to_string(::getpid()));
  std::FILE* f = std::fopen(probe.c_str(), "wb");
  const bool ok = f && std::fputs("probe", f) >= 0 && std::fflush(f) == 0;
  const int saved = errno;
  if (f) std::fclose(f);
  fs::remove(probe, ec);
  if (!ok) throw Error("--save " + save_dir + ": cannot write there (" + std::strerror(saved) + ")" + fix);
}

std::string checkpoint_dir_name(int64_t iteration) {
  if (iteration < 0) throw Error("checkpoint iteration must be >= 0, got " + std::to_string(iteration));
  char buf[32];
  std::snprintf(buf, sizeof buf, "iter_%07lld", static_cast<long long>(iteration));
  return buf;
}

void save_checkpoint(const std::string& save_dir, int64_t iteration, const std::map<std::string, SafeTensor>& model,
                     const std::map<std::string, SafeTensor>& optimizer, const nlohmann::json& meta) {
  const std::string name = checkpoint_dir_name(iteration);
  const fs::path root(save_dir.empty() ? "." : save_dir);
  const fs::path final = root / name;
  // Built with += because GCC 12 raises a false -Wrestrict on "literal" + std::string&&.
  std::string suffix = ".";
  suffix += std::to_string(::getpid());
  const fs::path tmp = root / (".tmp_" + name + suffix);
  const fs::path latest_tmp = root / (std::string(".") + kLatestFileName + suffix);
  try {
    std::string meta_text;
    try {
      meta_text = meta.dump(2) + "\n";
    } catch (const nlohmann::json::exception&) {
      throw Error("meta.json would hold a string that is not valid UTF-8");
    }
    fs::create_directories(root);
    // A leftover from this same pid can only be from an earlier failed try.
    fs::remove_all(tmp);
    fs::create_directory(tmp);
    // kiln import stops here on SIGTERM or Ctrl-C (N38); kiln train installs
    // no StopSignals (its job control saves first), so these never throw there.
    data::throw_if_stop_requested();
    write_safetensors((tmp / kModelFileName).string(), model, {{"format", "pt"}});
    fsync_path(tmp / kModelFileName, false);
    data::throw_if_stop_requested();
    if (!optimizer.empty()) {  // empty: saved with --no-save-optim
      write_safetensors((tmp / kOptimizerFileName).string(), optimizer, {{"format", "pt"}});
      fsync_path(tmp / kOptimizerFileName, false);
    }
    write_file_synced(tmp / kMetaFileName, meta_text);
    fsync_path(tmp, true);
    data::throw_if_stop_requested();
    publish_dir(tmp, final, root);

    // Megatron writes the bare number without a newline; so do we.
    write_file_synced(latest_tmp, std::to_string(iteration));
    fs::rename(latest_tmp, root / kLatestFileName);
    fsync_path(root, true);
  } catch (const data::StopRequested& stop) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw Error(std::string(stop.what()) + "; removed the temporary " + tmp.string() + " and wrote no checkpoint " +
                final.string());
  } catch (const std::exception& e) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    fs::remove(latest_tmp, ec);
    throw Error("cannot save checkpoint " + final.string() + ": " + e.what() +
                "; check free space and permissions of --save");
  }
}

bool holds_no_checkpoint(const std::string& load_path) {
  const fs::path p(load_path);
  std::error_code ec;
  if (!fs::exists(p, ec)) return true;
  if (!fs::is_directory(p, ec)) return false;
  for (const char* f : {kLatestFileName, kModelFileName, kMetaFileName})
    if (fs::exists(p / f, ec)) return false;
  return list_iter_dirs(p).empty();
}

ModelArchitecture checkpoint_architecture(const LoadedCheckpoint& ck) {
  const auto config = ck.meta.find("config");
  return model_config_from_json(config == ck.meta.end() ? nlohmann::json() : *config,
                                "checkpoint " + (fs::path(ck.dir) / kMetaFileName).string());
}

LoadedCheckpoint load_checkpoint(const std::string& load_path, CheckpointParts parts) {
  const fs::path p(load_path);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw Error("--load path " + load_path +
                " does not exist; point --load at a --save directory or one of its iter_XXXXXXX "
                "directories");
  if (!fs::is_directory(p, ec))
    throw Error("--load path " + load_path +
                " is not a directory; point --load at a --save directory or one of its "
                "iter_XXXXXXX directories");

  LoadedCheckpoint out;
  fs::path dir;
  bool have_iteration = false;
  const fs::path latest = p / kLatestFileName;
  if (fs::exists(latest, ec)) {
    // Megatron writes a file there; a directory of that name cannot be
    // "written into", so its fix is different.
    if (fs::is_directory(latest, ec))
      throw Error(latest.string() +
                  " is a directory, not the file holding the latest iteration number; remove it and write the "
                  "number into a file of that name, or point --load at an iter_XXXXXXX directory");
    const std::string text = read_input({latest.string(), "checkpoint pointer", kPointerFix, kMaxPointerFileBytes});
    const Parsed parsed = parse_iteration_text(text, out.iteration);
    if (parsed == Parsed::TooLarge)
      throw Error(latest.string() + " names iteration '" + printable(text) +
                  "', more than kiln can count (at most 9223372036854775807); write the number of an existing "
                  "iter_XXXXXXX directory into it or point --load at one");
    if (parsed != Parsed::Ok)
      throw Error(latest.string() + " should hold an iteration number but holds '" + printable(text) +
                  "'; fix it or point --load at an iter_XXXXXXX directory");
    dir = p / checkpoint_dir_name(out.iteration);
    if (!fs::is_directory(dir, ec))
      throw Error(latest.string() + " names iteration " + std::to_string(out.iteration) + " but " + dir.string() +
                  " does not exist; point --load at an existing iter_XXXXXXX directory");
    have_iteration = true;
  } else if (fs::exists(p / kModelFileName, ec) || fs::exists(p / kMetaFileName, ec)) {
    dir = p;
    have_iteration = iteration_from_dir_name(p.filename().string(), out.iteration);
  } else {
    const std::string found = list_iter_dirs(p);
    throw Error(load_path + " holds no checkpoint (no " + kLatestFileName + ", no " + kModelFileName + ")" +
                (found.empty() ? "; point --load at a directory that --save wrote"
                               : "; it contains " + found + ": point --load at one of them"));
  }
  out.dir = dir.string();

  for (const char* f : {kModelFileName, kMetaFileName})
    if (!fs::exists(dir / f, ec))
      throw Error("checkpoint " + out.dir + " is incomplete: " + f + " is missing" + kLoadFix);

  const fs::path meta_path = dir / kMetaFileName;
  const std::string meta_text = read_input(
      {meta_path.string(), "checkpoint", "re-save it or point --load at another checkpoint", kMaxJsonConfigBytes});
  try {
    out.meta = nlohmann::json::parse(meta_text);
  } catch (const nlohmann::json::exception& e) {
    std::string why = e.what();
    for (char& c : why)
      if (c == '\n' || c == '\r') c = ' ';
    throw Error("checkpoint " + meta_path.string() + " is corrupt: not valid JSON (" + why + ")" + kLoadFix);
  }
  if (!out.meta.is_object())
    throw Error("checkpoint " + meta_path.string() + " is corrupt: not a JSON object" + kLoadFix);

  // The latest file or the directory name gives the iteration; meta.json,
  // written with the tensors, must agree, or the files are not the ones
  // the name promises (a copied or hand-edited checkpoint).
  if (auto it = out.meta.find("iteration"); have_iteration && it != out.meta.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() != out.iteration)
      throw Error("checkpoint " + out.dir + " is named as iteration " + std::to_string(out.iteration) +
                  " but its meta.json says iteration " + it->dump() +
                  "; the files are not the ones the name promises: fix " + kLatestFileName +
                  " or point --load at the right iter_XXXXXXX directory");
  }
  // A copied or renamed iteration directory loses its iter_ name; fall back
  // to the iteration the caller recorded in meta.json.
  if (!have_iteration) {
    auto it = out.meta.find("iteration");
    if (it == out.meta.end() || !it->is_number_unsigned())
      throw Error("cannot tell which iteration " + out.dir +
                  " holds: its name is not iter_XXXXXXX and meta.json has no 'iteration'; rename "
                  "it to iter_XXXXXXX");
    out.iteration = it->get<int64_t>();
  }

  // A checkpoint saved with --no-save-optim says so in meta.json; any other
  // without optimizer.safetensors lost it.
  const bool saved_without_optimizer = out.meta.contains("optimizer") && out.meta["optimizer"].is_object() &&
                                       out.meta["optimizer"].value("state_saved", true) == false;
  // Only generate and export (Model) do without it; a Meta read checks it so
  // that a resume hears of the lost optimizer state first.
  const bool with_optimizer = parts != CheckpointParts::Model && !saved_without_optimizer;
  if (with_optimizer && !fs::exists(dir / kOptimizerFileName, ec))
    throw Error("checkpoint " + out.dir + " is incomplete: " + kOptimizerFileName + " is missing" + kLoadFix);
  if (parts == CheckpointParts::Meta) return out;
  // The tensors meta.json's model has, checked against each file's header
  // before its payload is read (a header may claim any size).
  ExpectedTensors model, optimizer;
  const bool known = expected_tensors(out.meta, model, optimizer, out.dir);
  out.model = load_tensors(dir / kModelFileName, known ? &model : nullptr);
  check_finite(dir / kModelFileName, out.model);
  if (with_optimizer && parts == CheckpointParts::ModelAndOptimizer)
    out.optimizer = load_tensors(dir / kOptimizerFileName, known ? &optimizer : nullptr);
  return out;
}

}  // namespace kiln::trainer
