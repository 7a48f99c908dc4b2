// kiln_opencl_tune_gemm: times CLBlast SGEMM on an OpenCL device under given
// Xgemm / XgemmDirect parameters, checking every result against a host
// reference (a wrong kernel is fast in a useless way). It is how the table in
// backends/opencl/gemm_tuning.cpp was found; docs/OPENCL.md has the runs.
//
//   kiln_opencl_tune_gemm [--device N] [--reps R] [--rounds N]
//                         [--shapes MxNxK[tA|tB],...] [--direct] [--min-indirect S]
//                         CONFIG...
//
// CONFIG is "KEY=V,KEY=V" applied on top of the base parameters ("base" for
// none, "clblast" for CLBlast's own choice). Each new configuration makes
// CLBlast compile its kernels again (seconds on PoCL the first time; PoCL's
// kernel cache makes returning to a configuration cheap). With --rounds N
// the configurations are measured round-robin N times and each cell is the
// best round: on a shared machine, load drifts between configurations
// measured one after the other, and interleaving spreads it evenly.
#include <clblast.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

using Params = std::unordered_map<std::string, size_t>;

// The starting point of the search in docs/OPENCL.md (not the result: that
// is in gemm_tuning.cpp).
const Params kBaseXgemm = {{"GEMMK", 0}, {"KREG", 1},  {"KWG", 32},  {"KWI", 2},  {"MDIMA", 8}, {"MDIMC", 8},
                           {"MWG", 64},  {"NDIMB", 8}, {"NDIMC", 8}, {"NWG", 64}, {"SA", 0},    {"SB", 0},
                           {"STRM", 0},  {"STRN", 0},  {"VWM", 8},   {"VWN", 4}};
const Params kBaseDirect = {{"KWID", 2}, {"MDIMAD", 8}, {"MDIMCD", 8}, {"NDIMBD", 8}, {"NDIMCD", 8},
                            {"PADA", 0}, {"PADB", 0},   {"VWMD", 4},   {"VWND", 4},   {"WGD", 32}};

struct Shape {
  size_t m, n, k;
  bool ta = false, tb = false;
  size_t batch = 1;  // > 1: a strided batch ("12b64x64x32tB")
  std::string label() const {
    return (batch > 1 ? std::to_string(batch) + "b" : std::string()) + std::to_string(m) + "x" + std::to_string(n) +
           "x" + std::to_string(k) + (ta ? "tA" : "") + (tb ? "tB" : "");
  }
};

std::vector<Shape> parse_shapes(const std::string& s) {
  std::vector<Shape> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    Shape sh{};
    const size_t b = item.find('b');
    if (b != std::string::npos) {
      sh.batch = std::stoul(item.substr(0, b));
      item = item.substr(b + 1);
    }
    if (std::sscanf(item.c_str(), "%zux%zux%zu", &sh.m, &sh.n, &sh.k) != 3) {
      std::fprintf(stderr, "bad shape %s\n", item.c_str());
      std::exit(2);
    }
    sh.ta = item.find("tA") != std::string::npos;
    sh.tb = item.find("tB") != std::string::npos;
    out.push_back(sh);
  }
  return out;
}

cl_context ctx;
cl_command_queue queue;
cl_device_id device;
int reps = 3;

cl_mem upload(const std::vector<float>& v) {
  cl_int e;
  cl_mem m =
      clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, v.size() * 4, const_cast<float*>(v.data()), &e);
  if (e != CL_SUCCESS) std::exit(3);
  return m;
}

// GFLOP/s (best of reps after one warm-up), or a negative number if the
// result is wrong or CLBlast refused the parameters.
double run(const Shape& s) {
  std::mt19937 gen(7);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> a(s.batch * s.m * s.k), b(s.batch * s.k * s.n), c(s.batch * s.m * s.n, NAN);
  for (float& x : a) x = u(gen);
  for (float& x : b) x = u(gen);
  cl_mem A = upload(a), B = upload(b), C = upload(c);
  const auto ta = s.ta ? clblast::Transpose::kYes : clblast::Transpose::kNo;
  const auto tb = s.tb ? clblast::Transpose::kYes : clblast::Transpose::kNo;
  const size_t lda = s.ta ? s.m : s.k, ldb = s.tb ? s.k : s.n;
  double best = 1e30;
  bool ok = true;
  for (int r = 0; r <= reps && ok; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    auto st = s.batch == 1 ? clblast::Gemm(clblast::Layout::kRowMajor, ta, tb, s.m, s.n, s.k, 1.0f, A, 0, lda, B, 0,
                                           ldb, 0.0f, C, 0, s.n, &queue)
                           : clblast::GemmStridedBatched(clblast::Layout::kRowMajor, ta, tb, s.m, s.n, s.k, 1.0f, A, 0,
                                                         lda, s.m * s.k, B, 0, ldb, s.k * s.n, 0.0f, C, 0, s.n,
                                                         s.m * s.n, s.batch, &queue);
    clFinish(queue);
    double dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (st != clblast::StatusCode::kSuccess) ok = false;
    if (r > 0) best = std::min(best, dt);
  }
  if (ok) {
    clEnqueueReadBuffer(queue, C, CL_TRUE, 0, c.size() * 4, c.data(), 0, nullptr, nullptr);
    // Spot-check 64 entries in double.
    for (int t = 0; t < 64 && ok; ++t) {
      size_t i = (t * 7919u) % s.m, j = (t * 104729u) % s.n, q = (t * 31u) % s.batch;
      const float* aq = a.data() + q * s.m * s.k;
      const float* bq = b.data() + q * s.k * s.n;
      double ref = 0.0;
      for (size_t p = 0; p < s.k; ++p)
        ref +=
            static_cast<double>(s.ta ? aq[p * s.m + i] : aq[i * s.k + p]) * (s.tb ? bq[j * s.k + p] : bq[p * s.n + j]);
      if (!(std::fabs(ref - c[q * s.m * s.n + i * s.n + j]) <= 1e-4 * (1.0 + std::sqrt(static_cast<double>(s.k)))))
        ok = false;
    }
  }
  clReleaseMemObject(A);
  clReleaseMemObject(B);
  clReleaseMemObject(C);
  return ok ? 2.0 * s.batch * s.m * s.n * s.k / best / 1e9 : -1.0;
}

Params with(const Params& base, const std::string& spec) {
  Params p = base;
  std::stringstream ss(spec);
  std::string kv;
  while (std::getline(ss, kv, ',')) {
    const size_t eq = kv.find('=');
    if (eq == std::string::npos) continue;
    p[kv.substr(0, eq)] = std::stoul(kv.substr(eq + 1));
  }
  return p;
}

}  // namespace

int main(int argc, char** argv) {
  int dev_index = 0, rounds = 1;
  bool direct = false;
  size_t min_indirect = 0;  // 0: leave CLBlast's threshold
  std::vector<Shape> shapes = parse_shapes("256x3072x768,1024x1152x384,2048x384x128,384x128x2048tA,2048x128x384tB");
  std::vector<std::string> configs;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--device" && i + 1 < argc)
      dev_index = std::atoi(argv[++i]);
    else if (a == "--reps" && i + 1 < argc)
      reps = std::atoi(argv[++i]);
    else if (a == "--rounds" && i + 1 < argc)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (a == "--shapes" && i + 1 < argc)
      shapes = parse_shapes(argv[++i]);
    else if (a == "--direct")
      direct = true;
    else if (a == "--min-indirect" && i + 1 < argc)
      min_indirect = std::stoul(argv[++i]);
    else
      configs.push_back(a);
  }
  if (configs.empty()) configs.push_back("base");

  cl_uint np = 0;
  clGetPlatformIDs(0, nullptr, &np);
  std::vector<cl_platform_id> platforms(np);
  clGetPlatformIDs(np, platforms.data(), nullptr);
  std::vector<cl_device_id> devices;
  for (cl_platform_id p : platforms) {
    cl_uint nd = 0;
    if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS) continue;
    std::vector<cl_device_id> ids(nd);
    clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ids.data(), nullptr);
    devices.insert(devices.end(), ids.begin(), ids.end());
  }
  if (dev_index < 0 || static_cast<size_t>(dev_index) >= devices.size()) {
    std::fprintf(stderr, "no OpenCL device %d (%zu found)\n", dev_index, devices.size());
    return 1;
  }
  device = devices[static_cast<size_t>(dev_index)];
  char name[256] = {};
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof(name) - 1, name, nullptr);
  cl_int e;
  ctx = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &e);
  queue = clCreateCommandQueue(ctx, device, 0, &e);
  std::printf("device: %s\n%-58s", name, "config");
  for (const Shape& s : shapes) std::printf(" %14s", s.label().c_str());
  std::printf("  (first call, s)\n");
  std::vector<std::vector<double>> best(configs.size(), std::vector<double>(shapes.size(), 0.0));
  std::vector<double> first_call(configs.size(), -1.0);
  for (int round = 0; round < rounds; ++round) {
    for (size_t ci = 0; ci < configs.size(); ++ci) {
      const std::string& cfg = configs[ci];
      if (cfg != "clblast") {
        const auto single = clblast::Precision::kSingle;
        const auto st =
            direct ? clblast::OverrideParameters(device, "XgemmDirect", single,
                                                 with(kBaseDirect, cfg == "base" ? "" : cfg))
                   : clblast::OverrideParameters(device, "Xgemm", single, with(kBaseXgemm, cfg == "base" ? "" : cfg));
        if (st != clblast::StatusCode::kSuccess) {
          for (double& b : best[ci]) b = -2.0;
          continue;
        }
        if (min_indirect > 0 || direct)
          clblast::OverrideParameters(device, "GemmRoutine", single,
                                      {{"XGEMM_MIN_INDIRECT_SIZE", direct ? 100000 : min_indirect}});
      }
      auto t0 = std::chrono::steady_clock::now();
      std::string line;
      for (size_t si = 0; si < shapes.size(); ++si) {
        const double g = run(shapes[si]);
        line += " " + std::to_string(g).substr(0, 6);
        if (si == 0 && first_call[ci] < 0)
          first_call[ci] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (g < 0 || best[ci][si] < 0)
          best[ci][si] = -1.0;
        else
          best[ci][si] = std::max(best[ci][si], g);
      }
      std::fprintf(stderr, "round %d/%d: %s:%s\n", round + 1, rounds, cfg.c_str(), line.c_str());
    }
  }
  for (size_t ci = 0; ci < configs.size(); ++ci) {
    std::printf("%-58s", configs[ci].c_str());
    for (double g : best[ci]) {
      if (g == -2.0)
        std::printf(" %14s", "REFUSED");
      else if (g < 0)
        std::printf(" %14s", "WRONG/FAIL");
      else
        std::printf(" %14.1f", g);
    }
    std::printf("  (%.1f)\n", first_call[ci]);
  }
  return 0;
}
