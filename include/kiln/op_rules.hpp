// The shape and type rule of every op, written once (header-only, part of
// the plugin SDK beside ir_decode.hpp).
//
// The host's graph builder uses `infer` to create each node's outputs, and
// every plugin uses `check_graph` to validate what it is asked to compile,
// then derives its own kernel parameters from shapes it can trust. Neither
// keeps a copy of any rule, so they cannot disagree. The rule of an op is
// the `rule` of its row in kiln/ops.h; ops with the same signature share one.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kiln/ir.h"
#include "kiln/ir_decode.hpp"

namespace kiln::ir {

using Dims = std::vector<int64_t>;

struct TensorType {
  kiln_dtype dtype = KILN_F32;
  Dims dims;
  bool operator==(const TensorType& o) const { return dtype == o.dtype && dims == o.dims; }
  bool operator!=(const TensorType& o) const { return !(*this == o); }
};

inline const char* dtype_name(kiln_dtype t) { return kiln_dtype_name(t); }

inline std::string dims_string(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

inline std::string type_string(const TensorType& t) {
  return std::string(dtype_name(t.dtype)) + " " + dims_string(t.dims);
}

// The largest vocabulary or id count an EMBEDDING_GRAD addresses: ids are
// i32 and kernels index rows with them.
inline constexpr int64_t kMaxRows = (int64_t{1} << 31) - 2;

namespace rules_detail {

// One "name:dtype" entry of a signature (kiln/ops.h).
struct Param {
  std::string name;
  char dtype = 'f';
};

// Parses a signature; a trailing "..." repeats the last entry.
inline std::vector<Param> parse_signature(const char* sig, bool* repeats) {
  std::vector<Param> params;
  *repeats = false;
  std::string word;
  auto flush = [&] {
    if (word.empty()) return;
    if (word.size() > 3 && word.compare(word.size() - 3, 3, "...") == 0) {
      *repeats = true;
      word.resize(word.size() - 3);
    }
    const size_t colon = word.find(':');
    params.push_back({word.substr(0, colon), colon + 1 < word.size() ? word[colon + 1] : '*'});
    word.clear();
  };
  for (const char* p = sig; *p; ++p) {
    if (*p == ' ')
      flush();
    else
      word += *p;
  }
  flush();
  return params;
}

inline const Param& param_at(const std::vector<Param>& params, size_t i) {
  return i < params.size() ? params[i] : params.back();
}

// Whether an input of dtype `got` may stand where the signature says `want`
// (kiln/ops.h). For 'f' this checks only that it is a float; that all 'f'
// inputs of a node share one dtype is checked by node_float_dtype.
inline bool dtype_fits(char want, kiln_dtype got) {
  switch (want) {
    case 'f': return kiln_dtype_is_float(got) != 0;
    case 'F': return got == KILN_F32;
    case 'i': return got == KILN_I32;
    default: return true;
  }
}

// What an input's dtype must be, in words, for an error message.
inline const char* dtype_wanted(char want) {
  switch (want) {
    case 'f': return "a float (f32, bf16, f16)";
    case 'F': return "f32";
    case 'i': return "i32";
    default: return "any dtype";
  }
}

// The node's float dtype: that of its 'f' inputs, which must agree (f32 for
// a node with none, FILL). Returns "" or an error naming both inputs.
inline std::string node_float_dtype(const std::vector<Param>& params, const std::vector<TensorType>& in,
                                    kiln_dtype* dtype) {
  *dtype = KILN_F32;
  int first = -1;
  for (size_t i = 0; i < in.size(); ++i) {
    if (param_at(params, i).dtype != 'f') continue;
    if (first < 0) {
      first = static_cast<int>(i);
      *dtype = in[i].dtype;
    } else if (in[i].dtype != *dtype) {
      return param_at(params, i).name + " is " + dtype_name(in[i].dtype) + " but " +
             param_at(params, static_cast<size_t>(first)).name + " is " + dtype_name(*dtype) +
             ": an op's float inputs share one dtype (cast one of them)";
    }
  }
  return {};
}

inline int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t x : d) n *= x;
  return n;
}

inline bool is_suffix(const Dims& suffix, const Dims& d) {
  return suffix.size() <= d.size() &&
         std::equal(suffix.begin(), suffix.end(), d.end() - static_cast<long>(suffix.size()));
}

// What a rule sees: the node's inputs and attributes, and the output shapes
// the caller chose where the op leaves them to it (FILL, RESHAPE, SUM_TO).
struct RuleInput {
  const kiln_op_info& info;
  const std::vector<TensorType>& in;
  const std::vector<int64_t>& ia;
  const std::vector<Dims>& given;
  std::vector<Param> inputs;
  const std::vector<float>* fa = nullptr;  // the float attributes (counted already)
};

// DROPOUT's and DROPOUT_KEYED's common checks, on x's dims: p in [0, 1),
// and a period no longer than the stride, which would give two elements one
// global index, hence one mask bit.
inline std::vector<Dims> dropout_block(const Dims& x, float p, int64_t period, int64_t stride) {
  if (!(p >= 0.0f && p < 1.0f)) throw "p must be in [0, 1), got " + std::to_string(p);
  if (period < 1) throw "period must be >= 1, got " + std::to_string(period);
  if (stride < period) throw "stride must be >= period " + std::to_string(period) + ", got " + std::to_string(stride);
  return {x};
}

// The output shapes of one node; an error is thrown as a std::string.
inline std::vector<Dims> apply_rule(const RuleInput& r) {
  const auto& in = r.in;
  const auto& ia = r.ia;
  auto name = [&](size_t i) { return param_at(r.inputs, i).name; };
  auto d = [&](size_t i) -> const Dims& { return in[i].dims; };
  auto same_as = [&](size_t i, size_t j) {
    if (d(i) != d(j)) throw name(j) + " " + dims_string(d(j)) + " differs from " + name(i) + " " + dims_string(d(i));
  };
  auto must_be = [&](size_t i, const Dims& want) {
    if (d(i) != want) throw name(i) + " must be " + dims_string(want) + ", got " + dims_string(d(i));
  };
  auto given = [&]() -> const Dims& {
    if (r.given.size() != 1) throw std::string("needs its output shape");
    return r.given[0];
  };
  switch (r.info.rule) {
    case KILN_RULE_GIVEN_SHAPE: return {given()};
    case KILN_RULE_BROADCAST:
      if (!is_suffix(d(1), d(0)))
        throw name(1) + " " + dims_string(d(1)) + " is not a suffix of " + name(0) + " " + dims_string(d(0));
      return {d(0)};
    case KILN_RULE_SAME:
      for (size_t i = 1; i < in.size(); ++i) same_as(0, i);
      return {d(0)};
    case KILN_RULE_MATMUL: {
      const Dims& a = d(0);
      const Dims& b = d(1);
      if (a.size() < 2 || a.size() != b.size())
        throw "needs equal ranks >= 2, got " + dims_string(a) + " and " + dims_string(b);
      const size_t n = a.size();
      if (!std::equal(a.begin(), a.end() - 2, b.begin()))
        throw "batch dims differ: " + dims_string(a) + " vs " + dims_string(b);
      const bool ta = ia[0] != 0, tb = ia[1] != 0;
      const int64_t m = ta ? a[n - 1] : a[n - 2], ka = ta ? a[n - 2] : a[n - 1];
      const int64_t kb = tb ? b[n - 1] : b[n - 2], cols = tb ? b[n - 2] : b[n - 1];
      if (ka != kb)
        throw "inner dims differ: " + dims_string(a) + (ta ? "^T" : "") + " @ " + dims_string(b) + (tb ? "^T" : "");
      Dims y(a.begin(), a.end() - 2);
      y.push_back(m);
      y.push_back(cols);
      return {y};
    }
    case KILN_RULE_EMBEDDING: {
      if (d(0).size() != 2) throw name(0) + " must be [V, C], got " + dims_string(d(0));
      Dims y = d(1);
      y.push_back(d(0)[1]);
      return {y};
    }
    case KILN_RULE_EMBEDDING_GRAD: {
      Dims ids = d(0);
      if (ids.empty()) throw name(0) + " must have rank >= 1";
      const int64_t cols = ids.back();
      ids.pop_back();
      if (ids != d(1)) throw name(0) + " " + dims_string(d(0)) + " does not match " + name(1) + " " + dims_string(d(1));
      if (ia[0] <= 0) throw std::string("vocab must be positive");
      if (ia[0] > kMaxRows) throw std::string("vocab too large");
      if (numel(d(1)) > kMaxRows) throw std::string("too many ids");
      return {{ia[0], cols}};
    }
    case KILN_RULE_NORM:
    case KILN_RULE_NORM_GRAD: {
      // (x, params [C]...) -> x, or (x, params [C]..., dy) -> (dx, then one
      // [C] gradient per parameter of the forward op, which may have more
      // than the backward reads: LayerNorm's beta).
      const bool grad = r.info.rule == KILN_RULE_NORM_GRAD;
      if (d(0).empty()) throw name(0) + " must have rank >= 1";
      const Dims c{d(0).back()};
      const size_t params_end = grad ? in.size() - 1 : in.size();
      for (size_t i = 1; i < params_end; ++i) must_be(i, c);
      if (!grad) return {d(0)};
      same_as(0, in.size() - 1);
      std::vector<Dims> out{d(0)};
      for (int i = 1; i < r.info.num_outputs; ++i) out.push_back(c);
      return out;
    }
    case KILN_RULE_SQUARE_ROWS: {
      const Dims& x = d(0);
      if (x.size() < 2 || x[x.size() - 1] != x[x.size() - 2])
        throw name(0) + " must be [..., T, T], got " + dims_string(x);
      return {x};
    }
    case KILN_RULE_LOSS:
    case KILN_RULE_LOSS_GRAD:
    case KILN_RULE_SHARD_LOSS:
    case KILN_RULE_SHARD_LOSS_GRAD: {
      // (logits [N, V], targets [N], then rowmax [N] for a shard, then the
      // incoming gradient for a backward op).
      if (d(0).size() != 2) throw name(0) + " must be [N, V], got " + dims_string(d(0));
      const int64_t n = d(0)[0];
      must_be(1, {n});
      const bool shard = r.info.rule == KILN_RULE_SHARD_LOSS || r.info.rule == KILN_RULE_SHARD_LOSS_GRAD;
      if (shard) must_be(2, {n});
      switch (r.info.rule) {
        case KILN_RULE_LOSS: return {{1}};
        case KILN_RULE_LOSS_GRAD: must_be(2, {1}); return {d(0)};
        case KILN_RULE_SHARD_LOSS: return {{n, 2}};
        default: must_be(3, {n, 2}); return {d(0)};
      }
    }
    case KILN_RULE_SUMS_LOSS:
    case KILN_RULE_SUMS_LOSS_GRAD:
      if (d(0).size() != 2 || d(0)[1] != 2) throw name(0) + " must be [N, 2], got " + dims_string(d(0));
      if (r.info.rule == KILN_RULE_SUMS_LOSS) return {{1}};
      must_be(1, {1});
      return {d(0)};
    case KILN_RULE_SUM_TO_SUFFIX:
      if (r.given.size() != 1 || given().empty() || !is_suffix(given(), d(0)))
        throw "output must be a non-empty suffix of " + dims_string(d(0)) +
            (r.given.size() == 1 ? ", got " + dims_string(given()) : std::string());
      return {given()};
    case KILN_RULE_RESHAPE:
      if (r.given.size() != 1 || given().size() > KILN_IR_MAX_RANK || numel(given()) != numel(d(0)))
        throw "cannot reshape " + dims_string(d(0)) + (r.given.size() == 1 ? " to " + dims_string(given()) : "");
      return {given()};
    case KILN_RULE_PERMUTE: {
      const Dims& x = d(0);
      if (ia.size() != x.size()) throw std::string("perm rank differs from input rank");
      std::vector<bool> seen(x.size(), false);
      Dims y;
      for (int64_t p : ia) {
        if (p < 0 || p >= static_cast<int64_t>(x.size()) || seen[static_cast<size_t>(p)])
          throw std::string("perm is not a permutation");
        seen[static_cast<size_t>(p)] = true;
        y.push_back(x[static_cast<size_t>(p)]);
      }
      return {y};
    }
    case KILN_RULE_SPLIT: {
      const Dims& x = d(0);
      const int64_t axis = ia[0], parts = ia[1];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) throw std::string("axis out of range");
      const auto a = static_cast<size_t>(axis);
      if (parts <= 0 || parts > 255 || x[a] % parts != 0)
        throw "dim " + std::to_string(x[a]) + " is not divisible into " + std::to_string(parts) + " parts";
      Dims y = x;
      y[a] /= parts;
      return std::vector<Dims>(static_cast<size_t>(parts), y);
    }
    case KILN_RULE_CONCAT: {
      if (in.empty()) throw std::string("needs inputs");
      const int64_t axis = ia[0];
      Dims y = d(0);
      if (axis < 0 || axis >= static_cast<int64_t>(y.size())) throw std::string("axis out of range");
      const auto a = static_cast<size_t>(axis);
      for (size_t i = 1; i < in.size(); ++i) {
        if (in[i].dtype != in[0].dtype) throw std::string("inputs have different dtypes");
        Dims s = d(i);
        if (s.size() != y.size()) throw std::string("ranks differ");
        const int64_t extent = s[a];
        s[a] = y[a];
        if (s != y) throw std::string("shapes differ outside the axis");
        y[a] += extent;
      }
      return {y};
    }
    case KILN_RULE_TO_SCALAR: return {{1}};
    case KILN_RULE_ADAMW:
      for (size_t i = 1; i < 4; ++i) same_as(0, i);
      must_be(4, {5});
      if (in.size() > 5) must_be(5, {1});  // ADAMW_CLIP's clip factor
      return {d(0), d(0), d(0)};
    case KILN_RULE_CAST:
      if (ia[0] < 0 || ia[0] > 255 || !kiln_dtype_is_float(static_cast<int>(ia[0])))
        throw "target dtype must be a float dtype (0 f32, 2 bf16, 3 f16), got " + std::to_string(ia[0]);
      return {d(0)};
    case KILN_RULE_ALL_REDUCE:
      if (ia[0] != 0 && ia[0] != 1) throw std::string("reduction must be 0 (sum) or 1 (max)");
      return {d(0)};
    case KILN_RULE_GATHER:
    case KILN_RULE_SCATTER: {
      const Dims& x = d(0);
      const int64_t axis = ia[0], ranks = ia[1];
      if (axis < 0 || axis >= static_cast<int64_t>(x.size())) throw std::string("axis out of range");
      if (ranks <= 0 || ranks > 65536) throw "ranks must be in [1, 65536], got " + std::to_string(ranks);
      const auto a = static_cast<size_t>(axis);
      Dims y = x;
      if (r.info.rule == KILN_RULE_SCATTER) {
        if (x[a] % ranks != 0)
          throw "dim " + std::to_string(x[a]) + " is not divisible into " + std::to_string(ranks) + " parts";
        y[a] /= ranks;
      } else {
        if (x[a] > (int64_t{1} << 40) / ranks) throw std::string("gathered dim too large");
        y[a] *= ranks;
      }
      return {y};
    }
    case KILN_RULE_ALIBI: {
      // x [..., H, T, T] (queries x keys), one slope per head.
      const Dims& x = d(0);
      if (x.size() < 3 || x[x.size() - 1] != x[x.size() - 2])
        throw name(0) + " must be [..., H, T, T], got " + dims_string(x);
      must_be(1, {x[x.size() - 3]});
      return {x};
    }
    case KILN_RULE_ROW_REDUCE:
      if (d(0).size() < 2) throw name(0) + " must have rank >= 2, got " + dims_string(d(0));
      return {Dims(d(0).begin(), d(0).end() - 1)};
    case KILN_RULE_ROPE: {
      // (x [..., T, D], cos [T, R], sin [T, R]) -> x; iattrs = {interleaved}.
      const Dims& x = d(0);
      if (x.size() < 2) throw name(0) + " must be [..., T, D], got " + dims_string(x);
      if (d(1).size() != 2) throw name(1) + " must be [T, R], got " + dims_string(d(1));
      same_as(1, 2);
      const int64_t t = x[x.size() - 2], features = x.back(), pairs = d(1)[1];
      if (d(1)[0] != t)
        throw name(1) + " " + dims_string(d(1)) + " has " + std::to_string(d(1)[0]) + " positions, " + name(0) + " " +
            dims_string(x) + " has T = " + std::to_string(t);
      if (2 * pairs > features)
        throw name(1) + " " + dims_string(d(1)) + " rotates 2R = " + std::to_string(2 * pairs) + " features, " +
            name(0) + " " + dims_string(x) + " has D = " + std::to_string(features);
      if (ia[0] != 0 && ia[0] != 1) throw "interleaved must be 0 or 1, got " + std::to_string(ia[0]);
      return {x};
    }
    case KILN_RULE_DROPOUT: {
      // iattrs {site, period, stride}, fattrs {p} (kiln/philox.h). The site
      // is Philox's second key word.
      must_be(1, {4});
      if (ia[0] < 0 || ia[0] > int64_t{UINT32_MAX}) throw "site must be in [0, 2^32), got " + std::to_string(ia[0]);
      return dropout_block(d(0), r.fa->at(0), ia[1], ia[2]);
    }
    case KILN_RULE_DROPOUT_KEYED:
      // iattrs {period, stride}, fattrs {p}; the site is the key's word 4.
      must_be(1, {5});
      return dropout_block(d(0), r.fa->at(0), ia[0], ia[1]);
    case KILN_RULE_DOCUMENT_ROWS: {
      // x [B, ..., T, T] (queries x keys of each sample's heads), one start per query.
      const Dims& x = d(0);
      if (x.size() < 3 || x[x.size() - 1] != x[x.size() - 2])
        throw name(0) + " must be [B, ..., T, T], got " + dims_string(x);
      must_be(1, {x[0], x.back()});
      return {x};
    }
    case KILN_RULE_CAST_FP8:
      if (ia[0] != 0 && ia[0] != 1) throw "format must be 0 (E4M3) or 1 (E5M2), got " + std::to_string(ia[0]);
      if (ia[1] != 0 && ia[1] != 1)
        throw "current must be 0 (the scale input) or 1 (from amax), got " + std::to_string(ia[1]);
      must_be(1, {1});
      if (r.info.num_outputs == 1) return {d(0)};  // FP8_GRAD_CAST
      return {d(0), {1}};
    case KILN_RULE_ATTENTION: {
      const Dims& q = d(0);
      if (q.size() < 2) throw name(0) + " must be [..., T, D], got " + dims_string(q);
      for (size_t i = 1; i < in.size(); ++i) same_as(0, i);
      if (r.info.num_outputs == 1) return {q};  // ATTENTION
      return {q, q, q};
    }
    case KILN_RULE_ATTENTION_DROPOUT: {
      // ATTENTION's operands, then the key; iattrs {period, stride}, fattrs {scale, p}.
      const Dims& q = d(0);
      if (q.size() < 2) throw name(0) + " must be [..., T, D], got " + dims_string(q);
      const size_t key = in.size() - 1;
      for (size_t i = 1; i < key; ++i) same_as(0, i);
      must_be(key, {5});
      Dims scores(q.begin(), q.end() - 1);
      scores.push_back(q[q.size() - 2]);  // the [..., T, T] probabilities the mask indexes
      dropout_block(scores, r.fa->at(1), ia[0], ia[1]);
      if (r.info.num_outputs == 1) return {q};  // ATTENTION_DROPOUT
      return {q, q, q};
    }
  }
  throw std::string("op has no shape rule");
}

}  // namespace rules_detail

// The output types of `op` on inputs of these types with these attributes,
// or (returned) a one-line error naming what is wrong; `out` is then
// unspecified. `given` holds the output shapes for the ops that take them
// from the caller (FILL, RESHAPE, SUM_TO) and is ignored by the others.
inline std::string infer(kiln_op op, const std::vector<TensorType>& in, const std::vector<int64_t>& iattrs,
                         const std::vector<float>& fattrs, const std::vector<Dims>& given,
                         std::vector<TensorType>* out) {
  using namespace rules_detail;
  const kiln_op_info* info = kiln_op_find(op);
  if (info == nullptr) return "unknown op " + std::to_string(static_cast<int>(op));
  auto count = [](const char* what, int want, size_t got) -> std::string {
    if (want == KILN_OP_ANY || static_cast<size_t>(want) == got) return {};
    return std::string("expects ") + std::to_string(want) + " " + what + ", got " + std::to_string(got);
  };
  std::string err = count("inputs", info->num_inputs, in.size());
  if (err.empty()) err = count("int attributes", info->num_iattrs, iattrs.size());
  if (err.empty()) err = count("float attributes", info->num_fattrs, fattrs.size());
  if (!err.empty()) return err;
  // The serialized form stores counts in one byte and ranks up to
  // KILN_IR_MAX_RANK: refuse what it cannot carry.
  if (in.size() > 255 || iattrs.size() > 255 || fattrs.size() > 255) return "more than 255 inputs or attributes";
  // A host collective's last int attribute names its process group (kiln_group).
  if ((info->properties & KILN_OPP_HOST_COLLECTIVE) != 0 && kiln_group_name(iattrs.back()) == nullptr)
    return "process group " + std::to_string(iattrs.back()) + " is not a kiln_group (0 tp ... " +
           std::to_string(KILN_GROUP_COUNT_ - 1) + " pp)";
  bool in_repeats = false, out_repeats = false;
  RuleInput r{*info, in, iattrs, given, parse_signature(info->inputs, &in_repeats), &fattrs};
  for (size_t i = 0; i < in.size(); ++i) {
    const Param& p = param_at(r.inputs, i);
    if (in[i].dims.size() > KILN_IR_MAX_RANK) return p.name + " has rank above " + std::to_string(KILN_IR_MAX_RANK);
    for (int64_t x : in[i].dims)
      if (x <= 0) return p.name + " has a non-positive dim in " + dims_string(in[i].dims);
    if (!dtype_fits(p.dtype, in[i].dtype))
      return p.name + " must be " + dtype_wanted(p.dtype) + ", got " + dtype_name(in[i].dtype);
  }
  kiln_dtype float_dtype = KILN_F32;
  if (std::string e = node_float_dtype(r.inputs, in, &float_dtype); !e.empty()) return e;
  std::vector<Dims> shapes;
  try {
    shapes = apply_rule(r);
  } catch (const std::string& why) {
    return why;
  }
  const std::vector<Param> outs = parse_signature(info->outputs, &out_repeats);
  out->clear();
  for (size_t i = 0; i < shapes.size(); ++i) {
    kiln_dtype dt = KILN_F32;  // 'F'
    switch (param_at(outs, i).dtype) {
      case '=': dt = in.at(0).dtype; break;
      case 'f': dt = float_dtype; break;
      case 'i': dt = KILN_I32; break;
      case 't': dt = static_cast<kiln_dtype>(iattrs.at(0)); break;  // CAST's rule checked it
      default: break;
    }
    out->push_back({dt, std::move(shapes[i])});
  }
  return {};
}

// Checks one decoded node against its op's rule: the outputs it declares
// must be exactly the ones the rule infers from its inputs.
inline std::string check_node(const DecodedGraph& g, const DecodedNode& n) {
  std::vector<TensorType> in, want;
  for (uint32_t v : n.inputs) in.push_back({g.values[v].dtype, g.values[v].dims});
  std::vector<Dims> declared;
  for (uint32_t v : n.outputs) declared.push_back(g.values[v].dims);
  std::string err = infer(n.op, in, n.iattrs, n.fattrs, declared, &want);
  if (!err.empty()) return err;
  if (want.size() != n.outputs.size())
    return "expects " + std::to_string(want.size()) + " outputs, got " + std::to_string(n.outputs.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const TensorType got{g.values[n.outputs[i]].dtype, g.values[n.outputs[i]].dims};
    if (got != want[i])
      return "output " + std::to_string(i) + " is " + type_string(got) + ", expected " + type_string(want[i]);
  }
  return {};
}

// Checks a decoded graph a plugin is asked to compile: every value has
// positive dims and an element-aligned offset, and every node obeys its rule.
// Returns "" or "node 3 (matmul): inner dims differ: ...".
inline std::string check_graph(const DecodedGraph& g) {
  for (size_t v = 0; v < g.values.size(); ++v) {
    const DecodedValue& val = g.values[v];
    for (int64_t x : val.dims)
      if (x <= 0) return "value " + std::to_string(v) + " has an empty dim " + dims_string(val.dims);
    if (val.offset % kiln_dtype_size(val.dtype) != 0)
      return "value " + std::to_string(v) + " is at an unaligned offset " + std::to_string(val.offset);
  }
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    std::string err = check_node(g, g.nodes[i]);
    if (!err.empty()) return "node " + std::to_string(i) + " (" + kiln_op_name(g.nodes[i].op) + "): " + err;
  }
  return {};
}

}  // namespace kiln::ir
