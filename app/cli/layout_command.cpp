#include "layout_command.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "layout_png.h"
#include "option_checks.h"
#include "stx/engine/export.h"
#include "stx/kernels/layout.h"
#include "stx/kernels/pattern.h"

namespace stx::cli {
namespace {

namespace kernels = stx::kernels;
// ordered: keys keep the order written here, which reads better than alphabetical.
using json = nlohmann::ordered_json;

// A fixed layout holds O(n^2 / l) blocks and a dense one O(n^2 / B^2); past this they take seconds and
// hundreds of MB to build, which is not what a quick look at a pattern should cost.
constexpr int64_t kMaxLayoutN = int64_t{1} << 16;
// Text output shows this many ranges from each end of a long attended set; --json always has them all.
constexpr size_t kRangesShownEachEnd = 8;

// The attended set of one position, split by subset. A1 and A2 overlap (j = i at least), so the two
// counts add up to more than |A(i)|.
struct AttendedSet {
  std::vector<kernels::KeyRange> ranges;
  int64_t count = 0;
  int64_t in_a1 = 0;
  int64_t in_a2 = 0;
};

AttendedSet attended(const kernels::HeadPattern& p, int64_t i) {
  AttendedSet set;
  kernels::attended_ranges(p, i, set.ranges);
  for (const kernels::KeyRange& r : set.ranges) {
    for (int64_t j = r.first; j <= r.last; ++j) {
      set.count++;
      set.in_a1 += kernels::in_a1(p, i, j) ? 1 : 0;
      set.in_a2 += kernels::in_a2(p, i, j) ? 1 : 0;
    }
  }
  return set;
}

// Cost of one head's layout; every block costs the same whether full or masked, so blocks measure work.
struct PartSummary {
  const kernels::LayoutPart* part = nullptr;
  int64_t blocks = 0;
  int64_t full = 0;
};

struct HeadSummary {
  std::vector<PartSummary> parts;
  int64_t blocks = 0;
  int64_t full = 0;
  int64_t attended_pairs = 0;
};

HeadSummary summarize(const kernels::Layout& layout, int64_t h) {
  HeadSummary s;
  for (const kernels::LayoutPart& part : layout.head(h).parts) {
    PartSummary ps;
    ps.part = &part;
    // A columns part is one list shared by all lanes; each lane visits it.
    ps.blocks = static_cast<int64_t>(part.row_key.size()) * part.lanes;
    ps.full = std::count(part.row_mask.begin(), part.row_mask.end(), -1) * part.lanes;
    s.blocks += ps.blocks;
    s.full += ps.full;
    s.parts.push_back(ps);
  }
  for (int64_t i = 0; i < layout.n; ++i) s.attended_pairs += kernels::attended_count(layout.heads[h], i);
  return s;
}

int64_t dense_causal_blocks(int64_t n, int block) {
  const int64_t nb = (n + block - 1) / block;
  return nb * (nb + 1) / 2;
}

int64_t dense_causal_pairs(int64_t n) { return n * (n + 1) / 2; }

std::string percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string view_name(const kernels::LayoutPart& part) {
  if (part.view == kernels::View::natural) return "natural";
  return "columns, step " + std::to_string(part.step);
}

std::string subset_name(const kernels::LayoutPart& part) {
  if (part.rule.pattern.pattern == kernels::Pattern::dense) return "all j <= i";
  return std::string(kernels::to_string(part.rule.include)) + (part.rule.exclude_a1 ? " minus A1" : "");
}

std::string range_text(const kernels::KeyRange& r) {
  if (r.first == r.last) return std::to_string(r.first);
  return "[" + std::to_string(r.first) + ", " + std::to_string(r.last) + "]";
}

std::string ranges_text(const std::vector<kernels::KeyRange>& ranges) {
  std::string s;
  auto add = [&](const kernels::KeyRange& r) { s += (s.empty() ? "" : " ") + range_text(r); };
  if (ranges.size() <= 2 * kRangesShownEachEnd) {
    for (const kernels::KeyRange& r : ranges) add(r);
    return s;
  }
  for (size_t k = 0; k < kRangesShownEachEnd; ++k) add(ranges[k]);
  s += " ... (" + std::to_string(ranges.size() - 2 * kRangesShownEachEnd) + " more ranges) ...";
  for (size_t k = ranges.size() - kRangesShownEachEnd; k < ranges.size(); ++k) add(ranges[k]);
  return s;
}

// "head 3", "heads 0-3" or "heads 0, 2, 4": heads with equal patterns are printed once.
std::string heads_text(const std::vector<int>& heads) {
  if (heads.size() == 1) return "head " + std::to_string(heads[0]);
  const bool consecutive = heads.back() - heads.front() + 1 == static_cast<int>(heads.size());
  if (consecutive) return "heads " + std::to_string(heads.front()) + "-" + std::to_string(heads.back());
  std::string s = "heads ";
  for (size_t k = 0; k < heads.size(); ++k) s += (k ? ", " : "") + std::to_string(heads[k]);
  return s;
}

void print_text(const LayoutOptions& options, const kernels::Layout& layout, int64_t query) {
  const int64_t n = layout.n;
  std::cout << "stx layout: n = " << n << ", block " << layout.block << ", " << layout.num_heads() << " head"
            << (layout.num_heads() == 1 ? "" : "s") << ", " << options.pattern.summary_line() << "\n";

  std::vector<std::vector<int>> groups(layout.unique.size());
  for (int h = 0; h < layout.num_heads(); ++h) groups[layout.head_to_unique[h]].push_back(h);

  std::cout << "\nAttended set A(" << query << ")\n";
  for (const std::vector<int>& heads : groups) {
    const kernels::HeadPattern& p = layout.heads[heads[0]];
    const AttendedSet set = attended(p, query);
    std::cout << "  " << heads_text(heads) << ": " << kernels::describe(p) << "\n";
    std::cout << "    |A(" << query << ")| = " << set.count;
    if (p.pattern != kernels::Pattern::dense)
      std::cout << "   in A1: " << set.in_a1 << "   in A2: " << set.in_a2;
    std::cout << "   (" << set.ranges.size() << " range" << (set.ranges.size() == 1 ? "" : "s") << ")\n";
    std::cout << "    " << ranges_text(set.ranges) << "\n";
  }

  std::cout << "\nBlock layout (B = " << layout.block
            << "; dense causal: " << dense_causal_blocks(n, layout.block) << " blocks, "
            << dense_causal_pairs(n) << " pairs per head)\n";
  int64_t total_blocks = 0, total_pairs = 0;
  for (const std::vector<int>& heads : groups) {
    const HeadSummary s = summarize(layout, heads[0]);
    total_blocks += s.blocks * static_cast<int64_t>(heads.size());
    total_pairs += s.attended_pairs * static_cast<int64_t>(heads.size());
    std::cout << "  " << heads_text(heads) << ": " << kernels::describe(layout.heads[heads[0]]) << ", "
              << s.parts.size() << " part" << (s.parts.size() == 1 ? "" : "s") << "\n";
    for (size_t k = 0; k < s.parts.size(); ++k) {
      const PartSummary& ps = s.parts[k];
      std::cout << "    part " << k << ": " << subset_name(*ps.part) << ", " << view_name(*ps.part) << ", "
                << ps.part->lanes << " lane" << (ps.part->lanes == 1 ? "" : "s") << " x "
                << ps.part->num_blocks << " query blocks: " << ps.blocks << " blocks (" << ps.full
                << " full, " << ps.blocks - ps.full << " masked)\n";
    }
    std::cout << "    blocks visited: " << s.blocks << " of " << dense_causal_blocks(n, layout.block)
              << " dense causal (" << percent(s.blocks, dense_causal_blocks(n, layout.block)) << "), "
              << s.full << " full, " << s.blocks - s.full << " masked\n";
    std::cout << "    attended pairs: " << s.attended_pairs << " ("
              << percent(s.attended_pairs, dense_causal_pairs(n)) << " of dense causal work)\n";
  }
  const int64_t heads = layout.num_heads();
  std::cout << "  all heads: " << total_blocks << " blocks visited ("
            << percent(total_blocks, heads * dense_causal_blocks(n, layout.block)) << " of dense causal), "
            << total_pairs << " attended pairs (" << percent(total_pairs, heads * dense_causal_pairs(n))
            << " of dense causal work)\n";
}

void print_json(const LayoutOptions& options, const kernels::Layout& layout, int64_t query) {
  const int64_t n = layout.n;
  json out = {{"n", n},
              {"block", layout.block},
              {"pattern", options.pattern.pattern},
              {"mode", options.pattern.mode},
              {"layer", options.pattern.layer},
              {"query", query},
              {"dense_causal_blocks_per_head", dense_causal_blocks(n, layout.block)},
              {"dense_causal_pairs_per_head", dense_causal_pairs(n)}};
  json heads = json::array();
  for (int h = 0; h < layout.num_heads(); ++h) {
    const kernels::HeadPattern& p = layout.heads[h];
    const AttendedSet set = attended(p, query);
    json ranges = json::array();
    for (const kernels::KeyRange& r : set.ranges) ranges.push_back({r.first, r.last});
    const HeadSummary s = summarize(layout, h);
    json parts = json::array();
    for (const PartSummary& ps : s.parts) {
      parts.push_back({{"subset", kernels::to_string(ps.part->rule.include)},
                       {"minus_a1", ps.part->rule.exclude_a1},
                       {"view", ps.part->view == kernels::View::natural ? "natural" : "columns"},
                       {"step", ps.part->step},
                       {"lanes", ps.part->lanes},
                       {"query_blocks", ps.part->num_blocks},
                       {"blocks", ps.blocks},
                       {"full_blocks", ps.full},
                       {"masked_blocks", ps.blocks - ps.full}});
    }
    heads.push_back(
        {{"head", h},
         {"pattern", kernels::to_string(p.pattern)},
         {"subset", kernels::to_string(p.subset)},
         {"stride", p.stride},
         {"summary", p.summary},
         {"summary_offset", p.summary_offset},
         {"describe", kernels::describe(p)},
         {"attended", {{"count", set.count}, {"in_a1", set.in_a1}, {"in_a2", set.in_a2}, {"ranges", ranges}}},
         {"layout",
          {{"parts", parts},
           {"blocks", s.blocks},
           {"full_blocks", s.full},
           {"masked_blocks", s.blocks - s.full},
           {"attended_pairs", s.attended_pairs}}}});
  }
  out["heads"] = heads;
  std::cout << out.dump() << "\n";  // one line: long range lists stay compact; pipe to jq to read
}

}  // namespace

CLI::App* add_layout_command(CLI::App& app, LayoutOptions& options) {
  CLI::App* command = app.add_subcommand(
      "layout", "Show the attended set of one position and the block layout of a layer's heads");
  command->add_option("--n", options.n, "sequence length n, 1.." + std::to_string(kMaxLayoutN))
      ->capture_default_str();
  options.pattern.add_to(*command, 128);
  options.query_option = command->add_option(
      "--query", options.query, "the position I whose attended set A(I) is shown [default: n - 1]");
  command->add_flag("--json", options.json, "print the attended sets and the layout summary as JSON");
  command->add_option("--png", options.png, "also draw the connectivity matrix (row i attends column j) to this PNG")
      ->check(non_empty_path());
  command->add_flag("--force", options.force, "replace an existing --png file");
  command->add_option("--head", options.head, "the head drawn by --png [default: the union of all heads]");
  command->footer(
      "Example: stx layout --pattern fixed --n 4096 --stride 128 --c 32 --mode multihead --heads 4 --query "
      "1000");
  return command;
}

int run_layout_command(const LayoutOptions& options) {
  require_between("--n", options.n, 1, kMaxLayoutN);
  options.pattern.validate();
  const int64_t query = options.query_option->count() > 0 ? options.query : options.n - 1;
  require_between("--query", query, 0, options.n - 1);

  // Before anything is printed: a clash with an existing file is the whole answer.
  if (!options.png.empty()) {
    require_between("--head", options.head, -1, options.pattern.heads - 1);
    engine::check_export_target(options.png, options.force ? engine::Overwrite::Replace : engine::Overwrite::Refuse);
  }
  const auto layout =
      kernels::build_layout(options.n, options.pattern.block, options.pattern.head_patterns());
  if (options.json)
    print_json(options, *layout, query);
  else
    print_text(options, *layout, query);
  if (!options.png.empty()) {
    write_layout_png(options.png, options.pattern.head_patterns(), options.n, options.head,
                     options.query_option->count() > 0 ? query : -1, options.force);
    if (!options.json) std::cout << "connectivity matrix written to " << options.png << "\n";
  }
  return 0;
}

}  // namespace stx::cli
