#include "trainer/model/alibi_slopes.h"

#include <cmath>

#include "core/error.h"

namespace kiln::trainer {

std::vector<double> alibi_slopes(int64_t heads, double alibi_bias_max) {
  if (heads <= 0) throw Error("internal: ALiBi slopes for " + std::to_string(heads) + " heads");
  int64_t padded = 1;
  while (padded < heads) padded *= 2;
  std::vector<double> slopes(static_cast<size_t>(padded));
  for (int64_t h = 0; h < padded; ++h)
    slopes[static_cast<size_t>(h)] =
        std::pow(2.0, -static_cast<double>(h + 1) * alibi_bias_max / static_cast<double>(padded));
  if (padded == heads) return slopes;
  std::vector<double> strided;
  for (int64_t start : {1, 0})
    for (int64_t h = start; h < padded; h += 2) strided.push_back(slopes[static_cast<size_t>(h)]);
  strided.resize(static_cast<size_t>(heads));
  return strided;
}

std::vector<double> alibi_slopes_of_rank(int64_t heads, double alibi_bias_max, int64_t tensor_parallel, int64_t rank) {
  if (tensor_parallel <= 0 || heads % tensor_parallel != 0 || rank < 0 || rank >= tensor_parallel)
    throw Error("internal: ALiBi slopes of rank " + std::to_string(rank) + " of " + std::to_string(tensor_parallel));
  const std::vector<double> all = alibi_slopes(heads, alibi_bias_max);
  const int64_t local = heads / tensor_parallel;
  return {all.begin() + rank * local, all.begin() + (rank + 1) * local};
}

}  // namespace kiln::trainer
