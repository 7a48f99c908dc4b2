#include "trainer/attention_backend.h"

#include "core/error.h"

namespace kiln::trainer {

const char* to_string(AttentionBackend b) {
  switch (b) {
    case AttentionBackend::Auto: return "auto";
    case AttentionBackend::Flash: return "flash";
    case AttentionBackend::Fused: return "fused";
    case AttentionBackend::Unfused: return "unfused";
    case AttentionBackend::Local: return "local";
  }
  return "?";
}

AttentionBackend parse_attention_backend(const std::string& s) {
  for (AttentionBackend b : {AttentionBackend::Auto, AttentionBackend::Flash, AttentionBackend::Fused,
                             AttentionBackend::Unfused, AttentionBackend::Local})
    if (s == to_string(b)) return b;
  throw Error("--attention-backend " + s + " is not one of auto, flash, fused, unfused, local");
}

AttentionChoice choose_attention(AttentionBackend asked, const GptConfig& model, const Device& device) {
  const Plugin& primary = device.plugin();
  AttentionChoice c;
  const bool wants_fused = asked != AttentionBackend::Unfused && asked != AttentionBackend::Local;
  const bool explicit_fused = asked == AttentionBackend::Flash || asked == AttentionBackend::Fused;
  const std::string asked_text = std::string("--attention-backend ") + to_string(asked);
  if (!wants_fused) {
    c.line = "attention: the unfused chain (" + asked_text + ")";
    return c;
  }
  // Attention dropout (training graphs; evaluation has none) needs the op
  // that carries the mask.
  const bool dropout = model.attention_dropout > 0.0f;
  const kiln_op op = dropout ? KILN_OP_ATTENTION_DROPOUT : KILN_OP_ATTENTION;
  if (!primary.supports(op)) {
    c.line = "attention: the unfused chain (backend " + primary.name + " has no fused attention kernel" +
             (dropout ? " with dropout, for --attention-dropout" : "") + ")";
    c.warn = explicit_fused;
    return c;
  }
  if (asked == AttentionBackend::Auto && device.properties().kind == KILN_DEVICE_CPU) {
    c.line =
        "attention: the unfused chain (--attention-backend auto on a CPU device, where the chain is as fast; "
        "--attention-backend fused runs backend " +
        primary.name + "'s fused kernel)";
    return c;
  }
  const AttentionChainReason why = attention_chain_reason(model);
  if (why != AttentionChainReason::None) {
    c.line = std::string("attention: the unfused chain (") + describe(why) + "; the fused kernel is the causal core)";
    c.warn = explicit_fused;
    return c;
  }
  c.fused = true;
  c.line = std::string("attention: fused (") + (dropout ? "ATTENTION_DROPOUT" : "ATTENTION") + " on backend " +
           primary.name + ", " + asked_text + ")";
  return c;
}

}  // namespace kiln::trainer
