#include "trainer/dist/gradient_buckets.h"

#include <algorithm>

#include "trainer/model/step_graphs.h"

namespace kiln::trainer::dist {

GradientBuckets::GradientBuckets(const std::vector<ParamSpec>& params, int64_t bucket_elements) {
  const auto limit = static_cast<size_t>(std::max<int64_t>(1, bucket_elements));
  for (size_t i = params.size(); i-- > 0;) {
    const auto count = static_cast<size_t>(graph::numel(params[i].shape));
    if (buckets_.empty() || buckets_.back().elements + count > limit) buckets_.emplace_back();
    Bucket& b = buckets_.back();
    b.members.push_back(i);
    b.elements += count;
    bucket_of_[grad_name(params[i].name)] = buckets_.size() - 1;
  }
  reset();
}

std::vector<size_t> GradientBuckets::complete(const std::vector<std::string>& ports) {
  std::vector<size_t> now;
  for (const std::string& port : ports) {
    const auto it = bucket_of_.find(port);
    if (it == bucket_of_.end()) continue;  // not a gradient (the loss, a sum of squares)
    if (!final_.insert(port).second) continue;
    Bucket& b = buckets_[it->second];
    if (b.not_final > 0 && --b.not_final == 0 && !b.started) {
      b.started = true;
      now.push_back(it->second);
    }
  }
  return now;
}

std::vector<size_t> GradientBuckets::remaining(size_t* early) {
  std::vector<size_t> rest;
  *early = 0;
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (buckets_[b].started) {
      ++*early;
      continue;
    }
    buckets_[b].started = true;
    rest.push_back(b);
  }
  return rest;
}

void GradientBuckets::reset() {
  final_.clear();
  for (Bucket& b : buckets_) {
    b.not_final = b.members.size();
    b.started = false;
  }
}

}  // namespace kiln::trainer::dist
