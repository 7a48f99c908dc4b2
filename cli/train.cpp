#include <exception>

#include "cli/cache_flags.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/fatal_signal_report.h"
#include "core/log.h"
#include "trainer/dist/comm.h"
#include "trainer/dist/same_flags.h"
#include "trainer/model/model_size.h"
#include "trainer/parallel_layout.h"
#include "trainer/trainer.h"

namespace kiln::cli {

int run_train(const std::vector<std::string>& args) {
  // A plugin that crashes names itself and the call in one line.
  install_fatal_signal_report();
  // Under mpirun/srun this is one rank of a data- and tensor-parallel job;
  // alone, a single process that never touches MPI.
  trainer::dist::World world;
  trainer::dist::Comm& comm = world.comm();
  // Info logs from one rank only (the last, which prints Megatron's lines).
  if (!comm.is_last_rank() && logger().level() < spdlog::level::warn) logger().set_level(spdlog::level::warn);
  trainer::TrainConfig cfg;
  trainer::Flags flags("train");
  cfg.register_flags(flags);
  CacheFlags cache_flags;
  cache_flags.register_flags(flags);
  try {
    if (!flags.parse(args)) return 0;
    trainer::dist::check_same_flags(comm, flags);
    trainer::set_world_size(cfg, comm.size(), "mpirun -np N");
    cfg.finalize(flags);
    // Before any weight is allocated: a model this host cannot hold is refused, not left to the OOM killer.
    trainer::check_weights_fit(cfg.model, cfg.tensor_model_parallel_size * cfg.pipeline_model_parallel_size);
    compiler_cache::configure(cache_flags.config());
    return trainer::train(cfg, comm);
  } catch (const Error& e) {
    // Every rank usually finds the same user error; one line from each ends
    // the job at once instead of leaving the others waiting in a collective.
    if (comm.size() > 1) comm.abort(e.what());
    throw;
  } catch (const std::exception& e) {
    if (comm.size() > 1) comm.abort(std::string("internal error: ") + e.what());
    throw;
  }
}

}  // namespace kiln::cli
