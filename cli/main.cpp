// kiln: the command-line entry point. Each subcommand lives in its own file;
// user errors surface as one line "kiln: error: ..." and exit status 1.
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "core/error.h"

namespace {

const char* kUsage =
    "usage: kiln <command> [flags]\n"
    "\n"
    "commands:\n"
    "  train          train a GPT (Megatron-LM flags; no flags: a small model on the embedded corpus)\n"
    "  generate       sample text from a checkpoint (--load DIR --prompt TEXT)\n"
    "  preprocess     tokenize JSONL into Megatron .bin/.idx (tools/preprocess_data.py flags)\n"
    "  devices        list backends, their devices, and plugin files that were skipped\n"
    "  check-backend  run the conformance suite against a backend (name or plugin path)\n"
    "  precompile     compile every graph 'kiln train <same flags>' will run into the compile cache\n"
    "  cache          inspect and maintain the compile cache (ls, verify, clear, gc, explain)\n"
    "  export         write a checkpoint as a Hugging Face model directory (--format hf)\n"
    "  import         read a Hugging Face GPT-2 directory into an iteration-0 checkpoint\n"
    "\n"
    "Run 'kiln <command> --help' for a command's flags.\n";

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  // Past a file size limit (ulimit -f) a write fails with EFBIG ("File too
  // large"), which every writer reports and cleans up after as for a full
  // disk; SIGXFSZ's default action would kill the process first and leave
  // its temporaries (docs/OPERATIONS.md).
  std::signal(SIGXFSZ, SIG_IGN);
  const std::string command = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  try {
    if (command == "train") return kiln::cli::run_train(args);
    if (command == "generate") return kiln::cli::run_generate(args);
    if (command == "devices") return kiln::cli::run_devices(args);
    if (command == "preprocess") return kiln::cli::run_preprocess(args);
    if (command == "check-backend") return kiln::cli::run_check_backend(args);
    if (command == "precompile") return kiln::cli::run_precompile(args);
    if (command == "cache") return kiln::cli::run_cache(args);
    if (command == "export") return kiln::cli::run_export(args);
    if (command == "import") return kiln::cli::run_import(args);
    std::fprintf(stderr, "kiln: error: unknown command '%s'\n%s", command.c_str(), kUsage);
    return 2;
  } catch (const kiln::ReportedError&) {
    return 1;  // its line is printed already
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "kiln: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "kiln: error: out of host memory; use a smaller model or batch\n");
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kiln: internal error: %s\n", e.what());
    return 3;
  }
}
