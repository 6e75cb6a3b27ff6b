// A model's own sampling defaults end to end: `stx export` sets them, `stx info` shows them, `stx sample`
// draws with them where no option was given and with the options where they were.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include "cli_test_support.h"
#include "stx/engine/checkpoint.h"

#ifdef STX_CLI_PATH

namespace {

namespace fs = std::filesystem;
using stx::test::CliResult;
using stx::test::run_stx;

using stx::test::save_tiny;

std::string sample_text(const stx::test::TempFolder& tmp, const fs::path& model, int seed, const std::string& extra) {
  const fs::path out = tmp / ("s" + std::to_string(seed) + ".txt");
  const CliResult r = run_stx(tmp, "sample text --quiet --force --model " + model.string() +
                                       " --prompt hi --max-bytes 24 --seed " + std::to_string(seed) + " " + extra +
                                       " --out " + out.string());
  EXPECT_EQ(r.status, 0) << r.err;
  return stx::test::slurp(out);
}

TEST(CliSampling, TheModelsDefaultsAreUsedUnlessAnOptionIsGiven) {
  stx::test::TempFolder tmp;
  const fs::path plain = save_tiny(tmp / "plain");
  // Temperature 0 makes the effect visible: every seed gives the same (most likely) bytes.
  CliResult r = run_stx(tmp, "export --model " + plain.string() + " --out " + (tmp / "greedy").string() +
                                 " --temperature 0");
  ASSERT_EQ(r.status, 0) << r.err;
  const fs::path greedy = tmp / "greedy";

  r = run_stx(tmp, "info --model " + greedy.string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("sampling     temperature 0, top-k off, top-p 1, min-p 0 (the model's own defaults)"),
            std::string::npos)
      << r.out;
  r = run_stx(tmp, "info --model " + plain.string());
  EXPECT_NE(r.out.find("sampling     temperature 1, top-k off"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("own defaults"), std::string::npos) << r.out;

  EXPECT_EQ(sample_text(tmp, greedy, 1, ""), sample_text(tmp, greedy, 2, ""));
  EXPECT_NE(sample_text(tmp, greedy, 1, "--temperature 1"), sample_text(tmp, greedy, 2, "--temperature 1"));
  EXPECT_NE(sample_text(tmp, plain, 1, ""), sample_text(tmp, plain, 2, ""));

  // Said on stderr when the model's defaults are in play, so the user knows what was drawn with.
  r = run_stx(tmp, "sample text --model " + greedy.string() + " --prompt hi --max-bytes 4 --top-k 5 --force --out " +
                       (tmp / "x.txt").string());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.err.find("sampling at temperature 0, top-k 5, top-p 1, min-p 0"), std::string::npos) << r.err;
}

TEST(CliSampling, ABadDefaultIsAUsageErrorAndWritesNothing) {
  stx::test::TempFolder tmp;
  const fs::path plain = save_tiny(tmp / "plain");
  const CliResult r = run_stx(tmp, "export --model " + plain.string() + " --out " + (tmp / "bad").string() +
                                       " --min-p 1.5");
  EXPECT_EQ(r.status, 2) << r.err;
  EXPECT_NE(r.err.find("min-p"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(tmp / "bad"));
}

}  // namespace

#endif  // STX_CLI_PATH
