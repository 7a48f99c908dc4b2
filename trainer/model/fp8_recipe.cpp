#include "trainer/model/fp8_recipe.h"

namespace kiln::trainer {

namespace {
std::string after_prefix(const std::string& port, const char* prefix) {
  const std::string p = prefix;
  return port.size() > p.size() && port.compare(0, p.size(), p) == 0 ? port.substr(p.size()) : std::string();
}
}  // namespace

std::string fp8_tensor_of_scale_port(const std::string& port) { return after_prefix(port, kFp8ScalePrefix); }
std::string fp8_tensor_of_amax_port(const std::string& port) { return after_prefix(port, kFp8AmaxPrefix); }

std::vector<std::string> fp8_linears(int64_t layer) {
  const std::string L = "decoder.layers." + std::to_string(layer) + ".";
  return {L + "self_attention.linear_qkv", L + "self_attention.linear_proj", L + "mlp.linear_fc1",
          L + "mlp.linear_fc2"};
}

}  // namespace kiln::trainer
