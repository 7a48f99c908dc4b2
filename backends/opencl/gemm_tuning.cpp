// GEMM parameters for devices CLBlast does not know. CLBlast matches its
// tuning database by vendor and device name; PoCL reports the host CPU's
// vendor string ("AuthenticAMD", "GenuineIntel") and a "pthread-..." device
// name that no entry matches, so CLBlast falls back to generic defaults
// (9-21 GFLOP/s on a 2-core EPYC). The parameters below come from a search
// on such a machine; docs/OPENCL.md records the search and its results.
#include <clblast.h>

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "gemm_clblast.h"

namespace kiln::ocl {
namespace {

using Params = std::unordered_map<std::string, size_t>;

struct Tuning {
  const char* label;
  // Match: substrings of the platform name, device name and vendor, and a
  // prefix of the driver version ("" matches anything).
  const char* platform;
  const char* device;
  const char* vendor;
  const char* driver;
  Params xgemm;
  Params xgemm_direct;
  size_t min_indirect;  // CLBlast's XGEMM_MIN_INDIRECT_SIZE
};

// PoCL's CPU device: its kernels run as loops over work items, vectorised
// across them, so the best tiles are large per-thread register tiles with
// wide vectors and no local-memory staging (local memory is ordinary memory
// on a CPU: staging only copies).
const Params kPoclXgemm = {{"GEMMK", 0}, {"KREG", 1},  {"KWG", 64},  {"KWI", 2},  {"MDIMA", 4}, {"MDIMC", 4},
                           {"MWG", 64},  {"NDIMB", 8}, {"NDIMC", 8}, {"NWG", 64}, {"SA", 0},    {"SB", 0},
                           {"STRM", 0},  {"STRN", 0},  {"VWM", 8},   {"VWN", 4}};
// The direct kernel only runs below the indirect threshold: in training,
// the per-head attention products of a batched GEMM.
const Params kPoclXgemmDirect = {{"KWID", 2}, {"MDIMAD", 4}, {"MDIMCD", 4}, {"NDIMBD", 4}, {"NDIMCD", 4},
                                 {"PADA", 0}, {"PADB", 0},   {"VWMD", 4},   {"VWND", 4},   {"WGD", 16}};
// m * n * k >= 128^3 goes to the indirect kernel: on PoCL it beats the
// direct one from there on, by 4x when B is transposed.
constexpr size_t kPoclMinIndirect = 128;

const Tuning kTable[] = {
    {"PoCL 3.x on x86-64 (measured on a 2-core AMD EPYC)", "Portable Computing Language", "pthread", "", "3.",
     kPoclXgemm, kPoclXgemmDirect, kPoclMinIndirect},
};

// What an unknown CPU device gets: the PoCL parameters.
const Tuning kCpuFallback = {
    "CPU device unknown to CLBlast (PoCL parameters)", "", "", "", "", kPoclXgemm, kPoclXgemmDirect, kPoclMinIndirect};

bool matches(const Tuning& t, const DeviceInfo& d) {
  return d.platform_name.find(t.platform) != std::string::npos && d.name.find(t.device) != std::string::npos &&
         d.vendor.find(t.vendor) != std::string::npos && d.driver_version.rfind(t.driver, 0) == 0;
}

// CLBlast 1.5's generic CPU defaults: what it returns for a device its
// database does not list.
bool clblast_has_no_tuning(const DeviceInfo& d) {
  Params p;
  if (clblast::RetrieveParameters(d.id, "Xgemm", clblast::Precision::kSingle, p) != clblast::StatusCode::kSuccess)
    return true;
  const Params generic = {{"GEMMK", 0}, {"KREG", 1},   {"KWG", 32},   {"KWI", 2},  {"MDIMA", 8}, {"MDIMC", 8},
                          {"MWG", 32},  {"NDIMB", 16}, {"NDIMC", 16}, {"NWG", 32}, {"SA", 1},    {"SB", 1},
                          {"STRM", 0},  {"STRN", 0},   {"VWM", 4},    {"VWN", 2}};
  return p == generic;
}

}  // namespace

std::string apply_gemm_tuning(const DeviceInfo& d) {
  static std::mutex mutex;
  static std::set<cl_device_id> done;
  std::lock_guard<std::mutex> lock(mutex);
  if (!done.insert(d.id).second) return {};
  const char* env = std::getenv("KILN_OPENCL_GEMM_TUNING");
  if (env != nullptr && std::strcmp(env, "clblast") == 0) return {};
  const Tuning* t = nullptr;
  for (const Tuning& e : kTable)
    if (matches(e, d)) t = &e;
  if (t == nullptr && d.kind == KILN_DEVICE_CPU && (d.is_pocl || clblast_has_no_tuning(d))) t = &kCpuFallback;
  if (t == nullptr) return {};
  const auto single = clblast::Precision::kSingle;
  if (clblast::OverrideParameters(d.id, "Xgemm", single, t->xgemm) != clblast::StatusCode::kSuccess ||
      clblast::OverrideParameters(d.id, "XgemmDirect", single, t->xgemm_direct) != clblast::StatusCode::kSuccess ||
      clblast::OverrideParameters(d.id, "GemmRoutine", single, {{"XGEMM_MIN_INDIRECT_SIZE", t->min_indirect}}) !=
          clblast::StatusCode::kSuccess)
    return std::string("could not install GEMM parameters (") + t->label + "); using CLBlast's";
  return t->label;
}

}  // namespace kiln::ocl
