// Temporaries a killed `kiln preprocess` left behind. A writer names its
// temporaries <prefix>.{bin,idx,lengths,docs}.tmp.<pid>; kill -9 (or a power
// cut) leaves them, full-size. The next run with the same --output-prefix
// removes those whose pid no longer exists on this host, and nothing else.
#pragma once

#include <string>
#include <vector>

namespace kiln::data {

// Removes <prefix>.{bin,idx,lengths,docs}.tmp.<pid> for every pid that is
// not alive (and not this process); returns the paths it removed.
std::vector<std::string> remove_dead_writers_temporaries(const std::string& prefix);

// The same rule for any writer that names its temporary <stem><pid> in
// `dir` (kiln export's .tmp_<output>.<pid> directory, N38): removes each
// such file or directory whose pid is not alive, and returns their paths.
std::vector<std::string> remove_dead_writers_entries(const std::string& dir, const std::string& stem);

}  // namespace kiln::data
