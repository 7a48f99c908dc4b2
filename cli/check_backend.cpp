// kiln check-backend: the conformance suite (graph/conformance) against one
// backend, by name or plugin path. The library holds the op cases; this
// command adds the whole-model cases, which need the GPT builder in
// trainer/, and turns the report into an exit status.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <memory>

#include "cli/commands.h"
#include "core/cpu_count.h"
#include "core/error.h"
#include "core/registry.h"
#include "graph/conformance/isolated.h"
#include "graph/conformance/large_cases.h"
#include "graph/conformance/op_cases.h"
#include "graph/conformance/perf.h"
#include "graph/conformance/runner.h"
#include "trainer/flags.h"
#include "trainer/model/step_graphs.h"
#include "trainer/rng.h"

namespace kiln::cli {
namespace {

constexpr const char* kUsage =
    "usage: kiln check-backend <backend-name | path/to/libkiln-backend-NAME.so> [flags]\n"
    "\n"
    "Runs every op of the IR (forward and backward, at shapes that are no multiple of\n"
    "any tile) and a whole GPT train and optimizer step on the backend, and compares\n"
    "each output with the reference interpreter by NMSE = sum((ref-got)^2)/sum(ref^2):\n"
    "<= 1e-7 for elementwise, norm, loss and optimizer ops, <= 1e-6 for matmul and\n"
    "softmax, exact for data movement. Guard bytes after every buffer catch writes past\n"
    "the end; outputs start as NaN to catch unwritten elements.\n"
    "\n"
    "Prints PASS, FAIL, UNSUPPORTED or FALLBACK per op (an op the plugin's op_supported denies is\n"
    "unsupported, not failed; the model cases run such ops on the cpu backend), then a\n"
    "summary. A case whose nodes the plugin refused (op_supported_node, or KILN_ERR_UNSUPPORTED\n"
    "at compile) runs on the cpu fallback and is no pass: the op's line counts the cases the\n"
    "plugin ran, \"PASS matmul 36/44 cases (8 on the fallback)\", and an op whose every case\n"
    "ran there is FALLBACK. Exit status: the number of failed ops and models.\n"
    "\n"
    "The cases run in a child process: a case that crashes it (SIGSEGV, abort(), exit())\n"
    "or hangs past --case-timeout fails with the signal and the plugin call that was\n"
    "running, and the rest go on in a new child.\n"
    "\n"
    "flags:\n"
    "  --device N        device index (default 0)\n"
    "  --filter A,B      only cases whose op or name contains one of these (case-insensitive)\n"
    "  --list            list the cases and exit\n"
    "  --verbose         a line per case with the NMSE of each output\n"
    "  --num-threads N   threads for host-CPU backends (0: all cores)\n"
    "  --repeat          run every graph twice; outputs must be bitwise identical\n"
    "  --strict          a case with any node on the cpu fallback fails (model cases too):\n"
    "                    for a plugin that claims to run everything it is given\n"
    "  --batch N         up to N op cases per graph, one compile each (0: all in one)\n"
    "  --hint NAME=VALUE an environment variable the plugin reads, set while it opens\n"
    "                    and runs (repeatable), e.g. KILN_CPU_DISABLE_AVX2=1\n"
    "  --case-timeout S  seconds a case may run before it fails as hung (default 120;\n"
    "                    0: no limit)\n"
    "  --in-process      run the cases in this process (for a debugger; a crash ends\n"
    "                    the run)\n"
    "  --perf            time each op instead of checking it: per op its largest case and\n"
    "                    GPT-2-small shapes (hidden 768, seq 1024), median us per run,\n"
    "                    GFLOP/s (matmul) or GB/s, and the speed relative to the cpu backend\n"
    "                    (run in this process; check conformance first)\n"
    "  --perf-runs N     timed runs per case and device (default 10)\n"
    "  --dtype D         bf16, f16 or f32: only the cases in that dtype. bf16/f16: every\n"
    "                    float op case with its float inputs rounded to D, judged\n"
    "                    against the f32 reference on the f32 inputs (thresholds per\n"
    "                    dtype, docs/MIXED_PRECISION.md); a backend that cannot store\n"
    "                    D reports each op unsupported. f32: the f32 cases only\n"
    "  --large           add cases above 2^20 elements (gelu, scale, add, permute,\n"
    "                    layernorm, matmul, cross entropy; named \"<op> large ...\"):\n"
    "                    slower, so not in the default run\n";

// Small and odd-sized: every dim is off any tile, and the step runs in well
// under a second on the reference interpreter.
trainer::GptConfig tiny_gpt() {
  trainer::GptConfig c;
  c.num_layers = 2;
  c.hidden_size = 36;
  c.num_attention_heads = 3;
  c.vocab_size = 67;
  c.seq_length = 17;
  return c;
}

// GPT-2-like initial values (as ModelState gives), with biases and gains
// off their trivial values so every gradient path carries signal.
graph::TensorMap gpt_parameters(const trainer::GptConfig& cfg, trainer::Rng& rng) {
  graph::TensorMap t;
  for (const trainer::ParamSpec& s : trainer::gpt_parameters(cfg)) {
    graph::HostTensor v = graph::HostTensor::zeros(KILN_F32, s.shape);
    for (float& x : v.f32) {
      const double n = rng.normal();
      x = static_cast<float>(s.init == trainer::ParamSpec::Init::Ones ? 1.0 + 0.1 * n : 0.02 * n);
    }
    t[s.name] = std::move(v);
  }
  return t;
}

graph::HostTensor token_ids(graph::Shape shape, int64_t vocab, trainer::Rng& rng) {
  graph::HostTensor t = graph::HostTensor::zeros(KILN_I32, std::move(shape));
  for (int32_t& id : t.i32) id = static_cast<int32_t>(rng.below(static_cast<uint64_t>(vocab)));
  return t;
}

void add_model_cases(conformance::Suite& suite) {
  const trainer::GptConfig cfg = tiny_gpt();
  const int64_t batch = 3;
  trainer::Rng rng(20240601);
  const graph::TensorMap params = gpt_parameters(cfg, rng);

  // Loss and every gradient. The accumulators start at zero so each output
  // is exactly one gradient, not masked by what it is added to.
  graph::TensorMap step = params;
  step["tokens"] = token_ids({batch, cfg.seq_length}, cfg.vocab_size, rng);
  step["targets"] = token_ids({batch, cfg.seq_length}, cfg.vocab_size, rng);
  for (const trainer::ParamSpec& s : trainer::gpt_parameters(cfg))
    step[trainer::grad_name(s.name)] = graph::HostTensor::zeros(KILN_F32, s.shape);
  suite.add_case("gpt_train_step", trainer::build_train_step(cfg, batch), conformance::kTolGemm, std::move(step));

  // AdamW on every parameter, then the gradients zeroed, all in place.
  graph::TensorMap opt = params;
  for (const trainer::ParamSpec& s : trainer::gpt_parameters(cfg)) {
    auto random = [&](double scale, bool positive) {
      graph::HostTensor v = graph::HostTensor::zeros(KILN_F32, s.shape);
      for (float& x : v.f32) x = static_cast<float>(scale * (positive ? rng.uniform_double() : rng.normal()));
      return v;
    };
    opt[trainer::grad_name(s.name)] = random(0.01, false);
    opt[trainer::exp_avg_name(s.name)] = random(0.001, false);
    opt[trainer::exp_avg_sq_name(s.name)] = random(1e-5, true);
  }
  graph::HostTensor hparams = graph::HostTensor::zeros(KILN_F32, {5});
  hparams.f32 = {3e-3f, 0.1f, 1.0f / (1.0f - 0.81f), 1.0f / (1.0f - 0.9025f), 0.5f};
  opt["hparams"] = hparams;
  suite.add_case("gpt_optimizer_step", trainer::build_optimizer_step(cfg, trainer::AdamWConfig{0.9f, 0.95f, 1e-8f}),
                 conformance::kTolElementwise, std::move(opt));
}

// --dtype: f32 keeps the cases whose graphs hold no 16-bit value (the
// model cases too); bf16/f16 are the op cases rebuilt in that dtype and
// judged against the f32 reference (add_dtype_cases).
conformance::Suite suite_for_dtype(const conformance::Suite& all, const std::string& dtype) {
  conformance::Suite picked;
  if (dtype == "f32") {
    for (const conformance::Case& c : all.cases()) {
      const auto& values = c.graph.values();
      if (std::none_of(values.begin(), values.end(),
                       [](const graph::Value& v) { return v.dtype == KILN_BF16 || v.dtype == KILN_F16; }))
        picked.add(c);
    }
  } else if (dtype == "bf16" || dtype == "f16") {
    const int left_out = conformance::add_dtype_cases(picked, dtype == "bf16" ? KILN_BF16 : KILN_F16);
    fmt::print(
        "--dtype {}: {} op cases left out: rounding their inputs to {} alone moves the f32 reference past a "
        "quarter of the threshold (f32 edge cases; the default run judges them against the rounded reference)\n",
        dtype, left_out, dtype);
  } else {
    throw Error("--dtype must be bf16, f16 or f32, not '" + dtype + "'");
  }
  return picked;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = std::min(s.find(',', start), s.size());
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// --perf: in this process (timings need no isolation; a plugin should pass
// the conformance run first), the cpu backend opened beside for the ratio.
int run_perf(const std::function<std::unique_ptr<Device>()>& open,
             const std::function<void(const Device&)>& print_header, const conformance::Suite& suite,
             const std::vector<std::string>& filters, int runs, int num_threads) {
  const std::vector<conformance::PerfCase> cases = conformance::perf_cases(suite, filters);
  if (cases.empty()) throw Error("no op or GPT shape matches --filter; see --list");
  auto device = open();
  print_header(*device);
  std::unique_ptr<Device> cpu;
  if (device->backend() != "cpu") cpu = Registry::instance().open("cpu", 0, num_threads);
  conformance::PerfOptions options;
  options.runs = runs;
  options.compare = cpu.get();
  return std::min(conformance::run_perf(*device, cases, options), 125);
}

}  // namespace

int run_check_backend(const std::vector<std::string>& args) {
  std::vector<std::string> rest = args;
  std::string backend;
  if (!rest.empty() && !rest[0].starts_with("-")) {
    backend = rest[0];
    rest.erase(rest.begin());
  }
  for (const std::string& a : rest)
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  int64_t device_index = 0, num_threads = 0, batch = 1;
  std::string filter;
  std::vector<std::string> hints;
  bool list = false, verbose = false, repeat = false, in_process = false, perf = false, large = false, strict = false;
  int64_t perf_runs = 10;
  double case_timeout_s = 120;
  trainer::Flags flags("check-backend");
  flags.add("--device", &device_index, "device index");
  flags.add("--filter", &filter, "comma-separated substrings of op or case names");
  flags.add("--list", &list, "list the cases and exit");
  flags.add("--verbose", &verbose, "a line per case");
  flags.add("--num-threads", &num_threads, "threads for host-CPU backends (0: all cores; capped at the CPUs)",
            trainer::Bounds::closed(0, kMaxThreadsFlag));
  flags.add("--repeat", &repeat, "run every graph twice and require bitwise-identical outputs");
  flags.add("--strict", &strict, "fail every case with a node on the cpu fallback");
  flags.add("--batch", &batch, "op cases per graph (0: all in one)");
  flags.add_repeatable("--hint", &hints, "NAME=VALUE environment variable for the plugin (repeatable)");
  flags.add("--case-timeout", &case_timeout_s, "seconds a case may run before it fails as hung (0: no limit)",
            trainer::Bounds::at_least(0));
  flags.add("--in-process", &in_process, "run the cases in this process (a crash ends the run)");
  flags.add("--perf", &perf, "time each op and GPT-2-small shapes instead of checking them");
  flags.add("--perf-runs", &perf_runs, "timed runs per case (the median is reported)",
            trainer::Bounds::closed(1, 100000));
  flags.add("--large", &large, "add the cases above 2^20 elements");
  std::string dtype;
  flags.add("--dtype", &dtype, "bf16, f16 or f32: run the cases in that dtype only (16-bit against the f32 reference)");
  flags.parse(rest);
  num_threads = cap_at_available_cpus("--num-threads", num_threads);
  if (batch < 0) throw Error("--batch must be 0 or more, not " + std::to_string(batch));

  conformance::Suite suite = conformance::Suite::builtin();
  add_model_cases(suite);
  if (large) conformance::add_large_cases(suite);
  if (!dtype.empty()) suite = suite_for_dtype(suite, dtype);
  const std::vector<std::string> filters = split_commas(filter);

  if (list) {
    for (const conformance::Case& c : suite.cases())
      if (conformance::selected(c, filters))
        fmt::print("{:<20} {:<8} {}\n", c.group, conformance::format_nmse(c.threshold), c.name);
    return 0;
  }
  if (backend.empty())
    throw Error("kiln check-backend needs a backend name or plugin path, e.g. kiln check-backend cpu");

  const conformance::ScopedHints scoped_hints(hints);
  auto open = [&] {
    return Registry::instance().open(backend, static_cast<int>(device_index), static_cast<int>(num_threads));
  };
  auto print_header = [](const Device& device) {
    fmt::print("check-backend: backend {} ({}, {}), device {}: {}\n", device.backend(), device.plugin().path,
               device.plugin().binary_identity(), device.index(), device.properties().name);
    std::fflush(stdout);
  };
  if (perf)
    return run_perf(open, print_header, suite, filters, static_cast<int>(perf_runs), static_cast<int>(num_threads));
  conformance::Options options;
  options.filters = filters;
  options.verbose = verbose;
  options.repeat = repeat;
  options.strict = strict;
  options.batch = static_cast<size_t>(batch);
  FallbackDevice fallback;  // whole-model cases run the ops a backend lacks on cpu
  options.fallback = &fallback;
  conformance::Report report;
  if (in_process) {
    auto device = open();
    print_header(*device);
    report = conformance::run(*device, suite, options);
  } else {
    conformance::Isolation isolation;
    isolation.open = open;
    isolation.on_open = print_header;
    isolation.case_timeout_s = case_timeout_s;
    report = conformance::run_isolated(suite, options, isolation);
  }
  if (report.cases.empty()) throw Error("no conformance case matches --filter " + filter + "; see --list");
  // Exit statuses above 125 mean something else to shells.
  return std::min(report.failed(), 125);
}

}  // namespace kiln::cli
