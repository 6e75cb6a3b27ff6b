#include "interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace stx::cli {
namespace {

std::atomic<bool> g_stop{false};
const char* g_notice = "";

void on_interrupt(int) {
  if (g_stop.exchange(true)) {
    signal(SIGINT, SIG_DFL);
    raise(SIGINT);
    return;
  }
  (void)!write(STDERR_FILENO, g_notice, std::strlen(g_notice));
}

}  // namespace

StopOnInterrupt::StopOnInterrupt(const char* notice) {
  g_notice = notice;
  g_stop = false;
  signal(SIGINT, on_interrupt);
}

StopOnInterrupt::~StopOnInterrupt() { signal(SIGINT, SIG_DFL); }

const std::atomic<bool>& StopOnInterrupt::flag() const { return g_stop; }

}  // namespace stx::cli
