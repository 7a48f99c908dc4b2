#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "trainer/trainer.h"

namespace kiln::cli {

int run_train(const std::vector<std::string>& args) {
  trainer::TrainConfig cfg;
  trainer::Flags flags("train");
  cfg.register_flags(flags);
  CacheFlags cache_flags;
  cache_flags.register_flags(flags);
  if (!flags.parse(args)) return 0;
  cfg.finalize(flags);
  cache::configure(cache_flags.config());
  return trainer::train(cfg);
}

}  // namespace kiln::cli
