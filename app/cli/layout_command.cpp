#include "layout_command.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "layout_png.h"
#include "option_checks.h"
#include "stx/engine/export/export.h"
#include "stx/engine/layout_report.h"

namespace stx::cli {
namespace {

// ordered: keys keep the order written here, which reads better than alphabetical.
using json = nlohmann::ordered_json;

// Text output shows this many ranges from each end of a long attended set; --json always has them all.
constexpr size_t kRangesShownEachEnd = 8;

std::string percent(int64_t part, int64_t whole) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f%%", 100.0 * static_cast<double>(part) / static_cast<double>(whole));
  return text;
}

std::string view_name(const engine::LayoutPartReport& part) {
  if (part.view == "natural") return part.view;
  return part.view + ", step " + std::to_string(part.step);
}

std::string subset_name(const engine::HeadGroupReport& group, const engine::LayoutPartReport& part) {
  if (group.pattern.pattern == "dense") return "all j <= i";
  return part.subset + (part.minus_a1 ? " minus A1" : "");
}

std::string range_text(const engine::PositionRange& r) {
  if (r.first == r.last) return std::to_string(r.first);
  return "[" + std::to_string(r.first) + ", " + std::to_string(r.last) + "]";
}

std::string ranges_text(const std::vector<engine::PositionRange>& ranges) {
  std::string s;
  auto add = [&](const engine::PositionRange& r) { s += (s.empty() ? "" : " ") + range_text(r); };
  if (ranges.size() <= 2 * kRangesShownEachEnd) {
    for (const engine::PositionRange& r : ranges) add(r);
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

void print_text(const engine::LayerPatternSpec& spec, const engine::LayoutReport& report) {
  const int64_t query = report.query;
  std::cout << "stx layout: n = " << report.n << ", block " << report.block << ", " << report.heads << " head"
            << (report.heads == 1 ? "" : "s") << ", " << spec.describe() << "\n";

  std::cout << "\nAttended set A(" << query << ")\n";
  for (const engine::HeadGroupReport& group : report.groups) {
    const engine::AttendedSetReport& set = group.attended;
    std::cout << "  " << heads_text(group.heads) << ": " << group.pattern.description << "\n";
    std::cout << "    |A(" << query << ")| = " << set.count;
    if (group.pattern.pattern != "dense") std::cout << "   in A1: " << set.in_a1 << "   in A2: " << set.in_a2;
    std::cout << "   (" << set.ranges.size() << " range" << (set.ranges.size() == 1 ? "" : "s") << ")\n";
    std::cout << "    " << ranges_text(set.ranges) << "\n";
  }

  std::cout << "\nBlock layout (B = " << report.block << "; dense causal: " << report.dense_causal_blocks
            << " blocks, " << report.dense_causal_pairs << " pairs per head)\n";
  int64_t total_blocks = 0, total_pairs = 0;
  for (const engine::HeadGroupReport& group : report.groups) {
    total_blocks += group.blocks * static_cast<int64_t>(group.heads.size());
    total_pairs += group.attended_pairs * static_cast<int64_t>(group.heads.size());
    std::cout << "  " << heads_text(group.heads) << ": " << group.pattern.description << ", "
              << group.parts.size() << " part" << (group.parts.size() == 1 ? "" : "s") << "\n";
    for (size_t k = 0; k < group.parts.size(); ++k) {
      const engine::LayoutPartReport& part = group.parts[k];
      std::cout << "    part " << k << ": " << subset_name(group, part) << ", " << view_name(part) << ", "
                << part.lanes << " lane" << (part.lanes == 1 ? "" : "s") << " x " << part.query_blocks
                << " query blocks: " << part.blocks << " blocks (" << part.full_blocks << " full, "
                << part.blocks - part.full_blocks << " masked)\n";
    }
    std::cout << "    blocks visited: " << group.blocks << " of " << report.dense_causal_blocks
              << " dense causal (" << percent(group.blocks, report.dense_causal_blocks) << "), "
              << group.full_blocks << " full, " << group.blocks - group.full_blocks << " masked\n";
    std::cout << "    attended pairs: " << group.attended_pairs << " ("
              << percent(group.attended_pairs, report.dense_causal_pairs) << " of dense causal work)\n";
  }
  const int64_t heads = report.heads;
  std::cout << "  all heads: " << total_blocks << " blocks visited ("
            << percent(total_blocks, heads * report.dense_causal_blocks) << " of dense causal), "
            << total_pairs << " attended pairs (" << percent(total_pairs, heads * report.dense_causal_pairs)
            << " of dense causal work)\n";
}

void print_json(const LayoutOptions& options, const engine::LayoutReport& report) {
  json out = {{"n", report.n},
              {"block", report.block},
              {"pattern", options.pattern.pattern},
              {"mode", options.pattern.mode},
              {"layer", options.pattern.layer},
              {"query", report.query},
              {"dense_causal_blocks_per_head", report.dense_causal_blocks},
              {"dense_causal_pairs_per_head", report.dense_causal_pairs}};
  json heads = json::array();
  for (int h = 0; h < report.heads; ++h) {
    const engine::HeadGroupReport& group = report.groups[static_cast<size_t>(report.group_of_head[h])];
    const engine::HeadPatternReport& p = group.pattern;
    const engine::AttendedSetReport& set = group.attended;
    json ranges = json::array();
    for (const engine::PositionRange& r : set.ranges) ranges.push_back({r.first, r.last});
    json parts = json::array();
    for (const engine::LayoutPartReport& part : group.parts) {
      parts.push_back({{"subset", part.subset},
                       {"minus_a1", part.minus_a1},
                       {"view", part.view},
                       {"step", part.step},
                       {"lanes", part.lanes},
                       {"query_blocks", part.query_blocks},
                       {"blocks", part.blocks},
                       {"full_blocks", part.full_blocks},
                       {"masked_blocks", part.blocks - part.full_blocks}});
    }
    heads.push_back(
        {{"head", h},
         {"pattern", p.pattern},
         {"subset", p.subset},
         {"stride", p.stride},
         {"summary", p.summary},
         {"summary_offset", p.summary_offset},
         {"describe", p.description},
         {"attended", {{"count", set.count}, {"in_a1", set.in_a1}, {"in_a2", set.in_a2}, {"ranges", ranges}}},
         {"layout",
          {{"parts", parts},
           {"blocks", group.blocks},
           {"full_blocks", group.full_blocks},
           {"masked_blocks", group.blocks - group.full_blocks},
           {"attended_pairs", group.attended_pairs}}}});
  }
  out["heads"] = heads;
  std::cout << out.dump() << "\n";  // one line: long range lists stay compact; pipe to jq to read
}

}  // namespace

CLI::App* add_layout_command(CLI::App& app, LayoutOptions& options) {
  CLI::App* command = app.add_subcommand(
      "layout", "Show the attended set of one position and the block layout of a layer's heads");
  command
      ->add_option("--n", options.n,
                   "sequence length n, 1.." + std::to_string(engine::kMaxLayoutReportLength))
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
  require_between("--n", options.n, 1, engine::kMaxLayoutReportLength);
  options.pattern.validate();
  const int64_t query = options.query_option->count() > 0 ? options.query : options.n - 1;
  require_between("--query", query, 0, options.n - 1);

  // Before anything is printed: a clash with an existing file is the whole answer.
  if (!options.png.empty()) {
    require_between("--head", options.head, -1, options.pattern.heads - 1);
    engine::check_export_target(options.png, options.force ? engine::Overwrite::Replace : engine::Overwrite::Refuse);
  }
  const engine::LayerPatternSpec spec = options.pattern.layer_spec(options.n);
  const engine::LayoutReport report = engine::layout_report(spec, query);
  if (options.json)
    print_json(options, report);
  else
    print_text(spec, report);
  if (!options.png.empty()) {
    write_layout_png(options.png, spec, options.head, options.query_option->count() > 0 ? query : -1,
                     options.force);
    if (!options.json) std::cout << "connectivity matrix written to " << options.png << "\n";
  }
  return 0;
}

}  // namespace stx::cli
