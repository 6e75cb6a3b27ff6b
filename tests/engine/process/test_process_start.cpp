// The programs' OpenMP spin policy and OpenBLAS kernel choice (stx/engine/process/process_start.h): this test binary starts like stx and
// stx-studio, and runs itself in a child with a chosen environment to see what the child's main() finds.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "stx/engine/process/process_start.h"

namespace {

const char* kReport = "--report-spin-environment";

// Runs this binary under `env -i <assignments>` and returns what it printed.
std::string child_environment(const std::string& assignments) {
  const std::string command = "env -i " + assignments + " /proc/" + std::to_string(getpid()) + "/exe " + kReport;
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return "popen failed";
  std::array<char, 256> buffer{};
  std::string out;
  while (std::fgets(buffer.data(), buffer.size(), pipe) != nullptr) out += buffer.data();
  const int status = pclose(pipe);
  return status == 0 ? out : "exit status " + std::to_string(status);
}

// What the child reports for OPENBLAS_CORETYPE when the user left it unset.
std::string chosen_coretype() {
  const char* c = stx::engine::openblas_coretype_for_this_cpu();
  return c ? c : "unset";
}

TEST(OpenMPSpinPolicy, ShortSpinsWhenTheUserChoseNothing) {
  EXPECT_EQ(child_environment(""),
            "GOMP_SPINCOUNT=3000 OMP_WAIT_POLICY=unset OPENBLAS_CORETYPE=" + chosen_coretype() + "\n");
}

TEST(OpenMPSpinPolicy, TheUsersSpinCountIsKept) {
  EXPECT_EQ(child_environment("GOMP_SPINCOUNT=300000"),
            "GOMP_SPINCOUNT=300000 OMP_WAIT_POLICY=unset OPENBLAS_CORETYPE=" + chosen_coretype() + "\n");
}

TEST(OpenMPSpinPolicy, TheUsersWaitPolicyIsKeptAndNoSpinCountAdded) {
  EXPECT_EQ(child_environment("OMP_WAIT_POLICY=ACTIVE"),
            "GOMP_SPINCOUNT=unset OMP_WAIT_POLICY=ACTIVE OPENBLAS_CORETYPE=" + chosen_coretype() + "\n");
}

TEST(OpenBlasCoretype, SkylakeXExactlyOnProcessorsWithAvx512) {
  const bool avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                      __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl") &&
                      __builtin_cpu_supports("avx512cd");
  EXPECT_EQ(chosen_coretype(), avx512 ? "SkylakeX" : "unset");
}

TEST(OpenBlasCoretype, TheUsersChoiceIsKept) {
  EXPECT_EQ(child_environment("OPENBLAS_CORETYPE=Haswell"),
            "GOMP_SPINCOUNT=3000 OMP_WAIT_POLICY=unset OPENBLAS_CORETYPE=Haswell\n");
  EXPECT_EQ(child_environment("OPENBLAS_CORETYPE=Haswell GOMP_SPINCOUNT=5"),
            "GOMP_SPINCOUNT=5 OMP_WAIT_POLICY=unset OPENBLAS_CORETYPE=Haswell\n");  // nothing to set: no restart
}

}  // namespace

int main(int argc, char** argv) {
  stx::engine::restart_with_short_openmp_spins(argv);
  if (argc == 2 && std::strcmp(argv[1], kReport) == 0) {
    const char* spins = std::getenv("GOMP_SPINCOUNT");
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    const char* coretype = std::getenv("OPENBLAS_CORETYPE");
    std::printf("GOMP_SPINCOUNT=%s OMP_WAIT_POLICY=%s OPENBLAS_CORETYPE=%s\n", spins ? spins : "unset",
                policy ? policy : "unset", coretype ? coretype : "unset");
    return 0;
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
