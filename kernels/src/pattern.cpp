#include "stx/kernels/pattern.h"

#include <algorithm>

#include "stx/kernels/error.h"

namespace stx::kernels {
namespace {

// Floor-mod for non-negative divisors; positions are never negative here, but keep it exact anyway.
int64_t mod(int64_t a, int64_t b) {
  int64_t r = a % b;
  return r < 0 ? r + b : r;
}

// First and one-past-last residue of the fixed pattern's summary cells inside a block of width l.
int64_t summary_lo(const HeadPattern& p) { return p.stride - p.summary - p.summary_offset; }
int64_t summary_hi(const HeadPattern& p) { return p.stride - p.summary_offset; }

}  // namespace

void validate(const HeadPattern& p) {
  if (p.pattern == Pattern::dense) return;
  STX_KERNEL_CHECK(p.stride >= 1, std::string("the ") + to_string(p.pattern) +
                                      " pattern needs a stride l >= 1, got l = " + std::to_string(p.stride));
  if (p.pattern == Pattern::fixed) {
    STX_KERNEL_CHECK(p.summary >= 1 && p.summary <= p.stride,
                     "the fixed pattern needs 1 <= c <= l, got c = " + std::to_string(p.summary) +
                         ", l = " + std::to_string(p.stride));
    STX_KERNEL_CHECK(p.summary_offset >= 0 && p.summary_offset + p.summary <= p.stride,
                     "the fixed pattern needs 0 <= summary offset <= l - c, got offset = " +
                         std::to_string(p.summary_offset) + " with l = " + std::to_string(p.stride) +
                         ", c = " + std::to_string(p.summary));
  }
}

bool in_a1(const HeadPattern& p, int64_t i, int64_t j) {
  if (j < 0 || j > i) return false;
  switch (p.pattern) {
    case Pattern::dense: return true;
    case Pattern::strided: return i - j <= p.stride;
    case Pattern::fixed: return j / p.stride == i / p.stride;
  }
  return false;
}

bool in_a2(const HeadPattern& p, int64_t i, int64_t j) {
  if (j < 0 || j > i) return false;
  switch (p.pattern) {
    case Pattern::dense: return true;
    case Pattern::strided: return mod(i - j, p.stride) == 0;
    case Pattern::fixed: {
      int64_t r = mod(j, p.stride);
      return r >= summary_lo(p) && r < summary_hi(p);
    }
  }
  return false;
}

bool attends(const HeadPattern& p, int64_t i, int64_t j) {
  switch (p.subset) {
    case Subset::a1: return in_a1(p, i, j);
    case Subset::a2: return in_a2(p, i, j);
    case Subset::both: return in_a1(p, i, j) || in_a2(p, i, j);
  }
  return false;
}

int64_t attended_count(const HeadPattern& p, int64_t i) {
  if (i < 0) return 0;
  if (p.pattern == Pattern::dense) return i + 1;
  const int64_t l = p.stride;
  if (p.pattern == Pattern::strided) {
    int64_t a1 = std::min(i, l) + 1;
    int64_t a2 = i / l + 1;
    int64_t overlap = (i >= l) ? 2 : 1;  // j = i, and j = i - l when it exists
    if (p.subset == Subset::a1) return a1;
    if (p.subset == Subset::a2) return a2;
    return a1 + a2 - overlap;
  }
  // fixed
  const int64_t own = mod(i, l);
  const int64_t a1 = own + 1;
  const int64_t lo = summary_lo(p), hi = summary_hi(p);
  const int64_t own_summary = std::max<int64_t>(0, std::min(hi - 1, own) - lo + 1);
  const int64_t a2 = (i / l) * p.summary + own_summary;
  if (p.subset == Subset::a1) return a1;
  if (p.subset == Subset::a2) return a2;
  return a1 + a2 - own_summary;
}

void attended_runs(const HeadPattern& p, int64_t i, std::vector<KeyRun>& out) {
  out.clear();
  if (i < 0) return;
  const bool want_a1 = p.subset != Subset::a2;
  const bool want_a2 = p.subset != Subset::a1;
  if (p.pattern == Pattern::dense) {
    out.push_back({0, i + 1, 1});
    return;
  }
  const int64_t l = p.stride;
  if (p.pattern == Pattern::strided) {
    const int64_t band_first = std::max<int64_t>(0, i - l);
    if (want_a2) {
      // Columns i - m*l, strictly before the band when there is one (the band already holds i and i - l).
      const int64_t first = mod(i, l);
      const int64_t last = want_a1 ? band_first - 1 : i;
      if (first <= last) out.push_back({first, (last - first) / l + 1, l});
    }
    if (want_a1) out.push_back({band_first, i - band_first + 1, 1});
    return;
  }
  // fixed: summary cells of earlier blocks, then the own block (which holds its own summary cells).
  const int64_t own_first = (i / l) * l;
  const int64_t lo = summary_lo(p), hi = summary_hi(p);
  if (want_a2) {
    for (int64_t b = 0; b < own_first; b += l) out.push_back({b + lo, hi - lo, 1});
  }
  if (want_a1) {
    out.push_back({own_first, i - own_first + 1, 1});
  } else if (want_a2 && own_first + lo <= i) {
    out.push_back({own_first + lo, std::min(i, own_first + hi - 1) - (own_first + lo) + 1, 1});
  }
}

void attended_ranges(const HeadPattern& p, int64_t i, std::vector<KeyRange>& out) {
  thread_local std::vector<KeyRun> runs;  // the layout builders call this once per row
  attended_runs(p, i, runs);
  out.clear();
  for (const KeyRun& r : runs) {
    if (r.step == 1) {
      out.push_back({r.first, r.first + r.count - 1});
    } else {
      for (int64_t t = 0; t < r.count; ++t) out.push_back({r.first + t * r.step, r.first + t * r.step});
    }
  }
}

std::vector<int64_t> attended_set(const HeadPattern& p, int64_t i) {
  std::vector<KeyRange> ranges;
  attended_ranges(p, i, ranges);
  std::vector<int64_t> out;
  for (const KeyRange& r : ranges)
    for (int64_t j = r.first; j <= r.last; ++j) out.push_back(j);
  return out;
}

std::vector<HeadPattern> layer_patterns(Pattern pattern, int64_t l, int64_t c, int heads, Combination mode,
                                        int layer) {
  STX_KERNEL_CHECK(heads >= 1, "a layer needs at least one head, got " + std::to_string(heads));
  STX_KERNEL_CHECK(layer >= 0, "the layer index must be >= 0, got " + std::to_string(layer));
  HeadPattern base;
  base.pattern = pattern;
  if (pattern != Pattern::dense) base.stride = l;
  if (pattern == Pattern::fixed) base.summary = c;
  validate(base);
  std::vector<HeadPattern> out(static_cast<size_t>(heads), base);
  if (pattern == Pattern::dense) return out;
  for (int h = 0; h < heads; ++h) {
    HeadPattern& p = out[static_cast<size_t>(h)];
    switch (mode) {
      case Combination::merged: p.subset = Subset::both; break;
      case Combination::interleaved: p.subset = (layer % 2 == 0) ? Subset::a1 : Subset::a2; break;
      case Combination::multihead:
        if (pattern == Pattern::strided) {
          p.subset = (h % 2 == 0) ? Subset::a1 : Subset::a2;
        } else {
          // Distinct c-wide summary sub-blocks per head, counted back from the block end.
          p.subset = Subset::both;
          p.summary_offset = (h % (l / c)) * c;
        }
        break;
    }
  }
  return out;
}

const char* to_string(Pattern p) {
  switch (p) {
    case Pattern::dense: return "dense";
    case Pattern::strided: return "strided";
    case Pattern::fixed: return "fixed";
  }
  return "?";
}

const char* to_string(Subset s) {
  switch (s) {
    case Subset::a1: return "A1";
    case Subset::a2: return "A2";
    case Subset::both: return "A1+A2";
  }
  return "?";
}

const char* to_string(Combination c) {
  switch (c) {
    case Combination::interleaved: return "interleaved";
    case Combination::merged: return "merged";
    case Combination::multihead: return "multihead";
  }
  return "?";
}

Pattern parse_pattern(const std::string& name) {
  if (name == "dense") return Pattern::dense;
  if (name == "strided") return Pattern::strided;
  if (name == "fixed") return Pattern::fixed;
  throw Error("unknown pattern '" + name + "': expected dense, strided or fixed");
}

Combination parse_combination(const std::string& name) {
  if (name == "interleaved") return Combination::interleaved;
  if (name == "merged") return Combination::merged;
  if (name == "multihead" || name == "multi-head") return Combination::multihead;
  throw Error("unknown combination '" + name + "': expected interleaved, merged or multihead");
}

std::string describe(const HeadPattern& p) {
  std::string s = to_string(p.pattern);
  if (p.pattern == Pattern::dense) return s;
  s += " l=" + std::to_string(p.stride);
  if (p.pattern == Pattern::fixed)
    s += " c=" + std::to_string(p.summary) + " offset=" + std::to_string(p.summary_offset);
  s += std::string(" ") + to_string(p.subset);
  return s;
}

}  // namespace stx::kernels
