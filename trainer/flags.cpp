#include "trainer/flags.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "core/error.h"

namespace kiln::trainer {

namespace {
std::string format_default(double v) {
  if (std::floor(v) == v && std::fabs(v) < 1e15) return std::to_string(static_cast<long long>(v));
  std::ostringstream o;
  o << v;
  return o.str();
}

// A float flag's value: one that is finite as a double but not as a float,
// or that is not zero but rounds to zero, would be trained with as inf or 0
// and saved as JSON null, which no --load accepts; it is refused instead.
float to_float(const std::string& flag, double v) {
  const auto f = static_cast<float>(v);
  if (!std::isfinite(f) || (v != 0 && f == 0))
    throw Error(fmt::format("{} {:g} is outside the range of the model's 32-bit config (magnitude {:g} to {:g}, or 0)",
                            flag, v, static_cast<double>(std::numeric_limits<float>::denorm_min()),
                            static_cast<double>(std::numeric_limits<float>::max())));
  return f;
}

// Levenshtein distance, for "did you mean" on a mistyped flag.
size_t distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t prev = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t cur = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, prev + (a[i - 1] == b[j - 1] ? 0 : 1)});
      prev = cur;
    }
  }
  return row[b.size()];
}
}  // namespace

bool Bounds::contains(double v) const {
  if (!std::isfinite(v)) return false;
  if (lo_open ? v <= lo : v < lo) return false;
  return hi_open ? v < hi : v <= hi;
}

std::string Bounds::describe() const {
  const bool has_lo = lo > -std::numeric_limits<double>::max(), has_hi = hi < std::numeric_limits<double>::max();
  if (has_lo && has_hi)
    return std::string("in ") + (lo_open ? "(" : "[") + format_default(lo) + ", " + format_default(hi) +
           (hi_open ? ")" : "]");
  if (has_lo) return (lo_open ? "above " : "at least ") + format_default(lo);
  if (has_hi) return (hi_open ? "below " : "at most ") + format_default(hi);
  return "finite";
}

void Flags::add_spec(const std::string& name, Kind kind, void* target, const std::string& help, Bounds bounds) {
  Spec s{name, kind, target, help, "", bounds, section_, {}, {}};
  switch (kind) {
    case Kind::Int: s.default_text = std::to_string(*static_cast<int64_t*>(target)); break;
    case Kind::Double: s.default_text = format_default(*static_cast<double*>(target)); break;
    case Kind::Float: s.default_text = format_default(*static_cast<float*>(target)); break;
    case Kind::String: s.default_text = *static_cast<std::string*>(target); break;
    case Kind::Parsed:  // add_parsed sets it
    case Kind::Bool:
    case Kind::NegatedBool:
    case Kind::List:
    case Kind::Repeatable: break;  // no default worth printing
  }
  specs_.push_back(std::move(s));
}

void Flags::add(const std::string& n, int64_t* t, const std::string& h, Bounds b) { add_spec(n, Kind::Int, t, h, b); }
void Flags::add(const std::string& n, double* t, const std::string& h, Bounds b) { add_spec(n, Kind::Double, t, h, b); }
void Flags::add(const std::string& n, std::string* t, const std::string& h) { add_spec(n, Kind::String, t, h); }
void Flags::add(const std::string& n, bool* t, const std::string& h) { add_spec(n, Kind::Bool, t, h); }
void Flags::add(const std::string& n, std::vector<std::string>* t, const std::string& h) {
  add_spec(n, Kind::List, t, h);
}

void Flags::add(const std::string& n, float* t, const std::string& h, Bounds b) { add_spec(n, Kind::Float, t, h, b); }
void Flags::add_negated(const std::string& n, bool* t, const std::string& h) { add_spec(n, Kind::NegatedBool, t, h); }

void Flags::add_parsed(const std::string& n, std::function<void(const std::string&)> parse,
                       std::function<std::string()> show, const std::string& h) {
  add_spec(n, Kind::Parsed, nullptr, h);
  specs_.back().default_text = show();
  specs_.back().parse = std::move(parse);
  specs_.back().show = std::move(show);
}

void Flags::add_repeatable(const std::string& n, std::vector<std::string>* t, const std::string& h) {
  add_spec(n, Kind::Repeatable, t, h);
}

void Flags::add_alias(const std::string& alias, const std::string& name, const std::string& h) {
  const Spec* s = find(name);
  if (s == nullptr) throw Error("Flags::add_alias: " + name + " is not added yet (add it before its alias)");
  Spec copy = *s;
  copy.name = alias;
  copy.help = h;
  copy.section = section_;
  specs_.push_back(std::move(copy));
  aliases_.emplace_back(alias, name);
}

const Flags::Spec* Flags::find(const std::string& name) const {
  for (const auto& s : specs_)
    if (s.name == name) return &s;
  return nullptr;
}

bool Flags::given(const std::string& name) const {
  return std::find(given_.begin(), given_.end(), name) != given_.end();
}

bool Flags::parse(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--help" || arg == "-h" || arg == "--help-all") {
      std::fputs(help(arg == "--help-all").c_str(), stdout);
      return false;
    }
    if (arg.rfind("--", 0) != 0)
      throw Error("kiln " + command_ + ": unexpected argument '" + arg + "' (flags start with --)");
    std::string name = arg, inline_value;
    bool has_inline = false;
    if (size_t eq = arg.find('='); eq != std::string::npos) {
      name = arg.substr(0, eq);
      inline_value = arg.substr(eq + 1);
      has_inline = true;
    }
    const Spec* s = find(name);
    if (!s) {
      std::string best;
      size_t best_d = 4;
      for (const auto& c : specs_)
        if (size_t d = distance(name, c.name); d < best_d) best = c.name, best_d = d;
      throw Error("kiln " + command_ + ": unknown flag " + name +
                  (best.empty() ? "" : " (did you mean " + best + "?)") + "; see kiln " + command_ + " --help");
    }
    given_.push_back(name);
    if (s->kind == Kind::Bool || s->kind == Kind::NegatedBool) {
      if (has_inline) throw Error("kiln " + command_ + ": " + name + " is a switch and takes no value");
      *static_cast<bool*>(s->target) = s->kind == Kind::Bool;
      continue;
    }
    std::vector<std::string> vals;
    if (has_inline) {
      vals.push_back(inline_value);
    } else {
      while (i + 1 < args.size() && (args[i + 1].rfind("--", 0) != 0)) {
        vals.push_back(args[++i]);
        if (s->kind != Kind::List && s->kind != Kind::Repeatable) break;
      }
    }
    if (vals.empty()) throw Error("kiln " + command_ + ": " + name + " needs a value");
    const std::string& v = vals[0];
    auto bad = [&](const char* what) {
      std::string m = "kiln " + command_ + ": " + name + " expects " + what;
      m += ", got '";
      m += v;
      m += "'";
      return Error(m);
    };
    auto check_bounds = [&](double x) {
      if (!std::isfinite(x)) throw bad("a finite number");
      if (!s->bounds.contains(x)) {
        std::string m = "kiln " + command_ + ": " + name + " must be " + s->bounds.describe();
        m += ", got ";
        m += v;
        throw Error(m);
      }
    };
    switch (s->kind) {
      case Kind::Int: {
        int64_t x = 0;
        auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
        if (ec != std::errc() || p != v.data() + v.size()) throw bad("an integer");
        check_bounds(static_cast<double>(x));
        *static_cast<int64_t*>(s->target) = x;
        break;
      }
      case Kind::Double:
      case Kind::Float: {
        // strtod, not stod: ERANGE also flags an underflow (1e-320 is a
        // finite denormal double, 1e-400 is 0), which is not "not finite";
        // only an overflow (HUGE_VAL) is. A float target refuses what turned
        // 0 in to_float, with its range.
        char* end = nullptr;
        errno = 0;
        const double x = std::strtod(v.c_str(), &end);
        if (v.empty() || end != v.c_str() + v.size()) throw bad("a number");
        if (errno == ERANGE && std::fabs(x) == HUGE_VAL) throw bad("a finite number");
        if (errno == ERANGE && x == 0)
          throw Error(
              fmt::format("kiln {}: {} {} is not 0 but below the smallest magnitude a number can have; give 0 "
                          "or a larger value",
                          command_, name, v));
        check_bounds(x);
        if (s->kind == Kind::Double)
          *static_cast<double*>(s->target) = x;
        else
          *static_cast<float*>(s->target) = to_float(name, x);
        break;
      }
      case Kind::Parsed: s->parse(v); break;
      case Kind::String: *static_cast<std::string*>(s->target) = v; break;
      case Kind::List: *static_cast<std::vector<std::string>*>(s->target) = vals; break;
      case Kind::Repeatable: {
        auto* list = static_cast<std::vector<std::string>*>(s->target);
        list->insert(list->end(), vals.begin(), vals.end());
        break;
      }
      case Kind::Bool:
      case Kind::NegatedBool: break;
    }
  }
  for (const auto& [alias, name] : aliases_)
    if (given(alias) && given(name))
      throw Error(fmt::format("kiln {}: {} is the old name of {}; give one of them", command_, alias, name));
  return true;
}

std::vector<std::pair<std::string, std::string>> Flags::values() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& s : specs_) {
    std::string v;
    switch (s.kind) {
      case Kind::Int: v = std::to_string(*static_cast<const int64_t*>(s.target)); break;
      case Kind::Double: {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.17g", *static_cast<const double*>(s.target));
        v = buf;
        break;
      }
      case Kind::Float: {
        // The shortest text that reads back as the same float.
        char buf[32];
        const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, *static_cast<const float*>(s.target));
        v.assign(buf, ec == std::errc() ? end : buf);
        break;
      }
      case Kind::String: v = *static_cast<const std::string*>(s.target); break;
      case Kind::Parsed: v = s.show(); break;
      case Kind::Bool: v = *static_cast<const bool*>(s.target) ? "true" : "false"; break;
      case Kind::NegatedBool: v = *static_cast<const bool*>(s.target) ? "false" : "true"; break;
      case Kind::List:
      case Kind::Repeatable:
        for (const std::string& item : *static_cast<const std::vector<std::string>*>(s.target))
          v += (v.empty() ? "" : " ") + item;
        break;
    }
    out.emplace_back(s.name, v);
  }
  return out;
}

std::string Flags::help(bool all) const {
  std::ostringstream o;
  o << "usage: kiln " << command_ << " [flags]\n\n";
  std::vector<std::string> sections = {""};
  for (const auto& s : specs_)
    if (std::find(sections.begin(), sections.end(), s.section) == sections.end()) sections.push_back(s.section);
  for (const std::string& section : sections) {
    if (!section.empty()) o << "\n" << section << ":\n";
    const auto folded = std::find_if(summaries_.begin(), summaries_.end(),
                                     [&](const auto& title_summary) { return title_summary.first == section; });
    if (!all && folded != summaries_.end()) {
      o << folded->second << "\n";
      continue;
    }
    for (const auto& s : specs_) {
      if (s.section != section) continue;
      std::string left = "  " + s.name;
      if (s.kind == Kind::Int) left += " N";
      if (s.kind == Kind::Double || s.kind == Kind::Float) left += " X";
      if (s.kind == Kind::String || s.kind == Kind::Parsed) left += " S";
      if (s.kind == Kind::List || s.kind == Kind::Repeatable) left += " ...";
      o << left;
      o << std::string(left.size() < 36 ? 36 - left.size() : 1, ' ') << s.help;
      // A help text that states its default ("(default: --train-iters)")
      // says it better than the stored value (0).
      if (!s.default_text.empty() && s.help.find("(default") == std::string::npos)
        o << " (default " << s.default_text << ")";
      o << "\n";
    }
  }
  return o.str();
}

}  // namespace kiln::trainer
