// Runs conformance cases on a device and reports them op by op.
//
// Each case runs on the reference interpreter and through graph::Executable
// on the device. Every port buffer is bound with guard bytes after the
// tensor (a write past the end fails the case) and outputs start as NaN
// (an element a kernel forgets to write fails); inputs that no output
// updates must come back unchanged. Options add what the per-backend unit
// tests need: two runs with bitwise-equal results, many cases in one graph
// (one compile: PoCL spends about half a second per program), and hints
// (environment variables the plugin reads, such as the cpu plugin's
// KILN_CPU_DISABLE_AVX2) set while the device opens and runs.
#pragma once

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/backend.h"
#include "core/fallback_device.h"
#include "graph/conformance/suite.h"

namespace kiln::conformance {

// Fallback: the case passed, but (some of) it ran on the cpu fallback, not
// the backend: its op's nodes were refused at placement (op_supported_node)
// or at compile (KILN_ERR_UNSUPPORTED). Such a case says nothing about the
// backend's kernels, so it is not a pass; Options::strict makes it a failure.
enum class Status { Pass, Fail, Unsupported, Fallback };  // Fallback last: isolated.cpp checks the range
const char* status_name(Status s);                        // "PASS", "FAIL", "UNSUPPORTED", "FALLBACK"

struct CaseResult {
  const Case* c = nullptr;
  Status status = Status::Pass;
  double nmse = 0.0;                                    // worst over the outputs
  std::string detail;                                   // why it failed or is unsupported; for passes, how it was split
  std::vector<std::pair<std::string, double>> outputs;  // NMSE per output port
  double seconds = 0.0;
};

// One report line: every case of a group.
struct GroupResult {
  std::string group;
  // FAIL if any case failed, else PASS if any passed on the backend, else
  // FALLBACK if any passed on the fallback, else UNSUPPORTED.
  Status status = Status::Pass;
  int cases = 0, passed = 0, failed = 0, unsupported = 0, fallback = 0;
  double worst_nmse = 0.0;  // over the cases the backend ran
  double threshold = 0.0;
  std::string detail;  // FAIL: the first failure; UNSUPPORTED: what is missing; PASS: a note; FALLBACK: the split
  // While the cases run:
  std::string first_failure, unsupported_reason, note, fallback_note;
};

struct Options {
  // Case-insensitive substrings; a case runs if its group or name contains
  // any of them. Empty: every case.
  std::vector<std::string> filters;
  bool verbose = false;     // a line per case, with NMSE per output
  std::FILE* out = stdout;  // nullptr: print nothing
  // Run every graph twice and require bit-identical outputs: kernels are
  // deterministic for a fixed device (and thread count).
  bool repeat = false;
  // Up to this many op cases in one graph (ports renamed c<i>.<name>), so a
  // backend with a slow compiler compiles once per batch; 0: all in one.
  // Whole-model cases and error cases run alone. A batch that fails to
  // compile or run is retried case by case to name the culprit.
  size_t batch = 1;
  // Runs the ops whole-model cases need and the backend lacks (the cpu
  // device, opened on first need); nullptr: such cases fail with a line
  // naming the ops.
  FallbackDevice* fallback = nullptr;
  // A case with any node on the fallback fails (check-backend --strict: a
  // plugin that claims to run everything it is given).
  bool strict = false;
};

// Sets environment variables ("NAME=VALUE") for its lifetime and restores
// the old values after: the way to pass a plugin a device-open or compile
// hint, e.g. KILN_CPU_DISABLE_AVX2=1 (the cpu plugin's baseline kernels) or
// KILN_OPENCL_GPU_CODEGEN=1 (OpenCL's GPU code on any device). Throws on an
// entry without '='.
class ScopedHints {
 public:
  explicit ScopedHints(const std::vector<std::string>& hints);
  ~ScopedHints();
  ScopedHints(const ScopedHints&) = delete;
  ScopedHints& operator=(const ScopedHints&) = delete;

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;  // name, old value
};

bool selected(const Case& c, const std::vector<std::string>& filters);

// One case alone on the device (options.batch does not apply).
CaseResult run_case(Device& device, const Case& c, const Options& options);

struct Report {
  std::vector<CaseResult> cases;
  std::vector<GroupResult> groups;
  // Selected ops that no backend runs (is_host_collective): listed, not run,
  // and neither passed, failed nor unsupported.
  std::vector<kiln_op> host_collectives;
  double seconds = 0.0;
  int passed() const;
  int failed() const;  // groups with a failed case: the exit status
  int unsupported() const;
  int fallback() const;  // groups whose every case that ran, ran on the fallback
};

// Runs the selected cases in suite order, printing a line per group as it
// finishes (and per case with verbose), a HOST line per host collective the
// filters select, then a summary line.
Report run(Device& device, const Suite& suite, const Options& options);

// What a run executes, in order: one graph of op cases (up to
// options.batch of them) or one case alone (whole-model and error cases,
// and every case when batch is 1).
struct Unit {
  std::vector<const Case*> cases;
  bool alone = false;  // run_case; else merged into one graph (run_batch)
};

// Runs one unit on the device: a result per case, in the unit's order. A
// merged graph that fails as a whole is retried case by case.
std::vector<CaseResult> run_unit(Device& device, const Unit& unit, const Options& options);

// run() with the execution left to `runner`, which gets every unit and
// reports each case's result through `done` (in any order; a group's line is
// printed once all its cases are done). run() runs them in this process;
// run_isolated (isolated.h) in child processes that may crash.
using CaseDone = std::function<void(const Case*, CaseResult)>;
using UnitRunner = std::function<void(const std::vector<Unit>& units, const CaseDone& done)>;
Report run_units(const Suite& suite, const Options& options, const UnitRunner& runner);

}  // namespace kiln::conformance
