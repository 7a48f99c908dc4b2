// Subcommands of the kiln CLI. Each takes the arguments after its name and
// returns the process exit status; user errors throw kiln::Error.
#pragma once

#include <string>
#include <vector>

namespace kiln::cli {

int run_train(const std::vector<std::string>& args);
int run_generate(const std::vector<std::string>& args);
int run_devices(const std::vector<std::string>& args);
int run_preprocess(const std::vector<std::string>& args);
int run_check_backend(const std::vector<std::string>& args);
int run_precompile(const std::vector<std::string>& args);
int run_cache(const std::vector<std::string>& args);
int run_export(const std::vector<std::string>& args);
int run_import(const std::vector<std::string>& args);

}  // namespace kiln::cli
