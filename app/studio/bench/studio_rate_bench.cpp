// stx-studio-bench: the studio's generation rate, as its status bar shows it, against `stx sample`'s on the
// same bundled model and length, side by side in one run, with the tab's live attention view on.
//
//   stx-studio-bench --kind audio,text,image --rounds 3 [--json FILE]
//
// Each round generates once in the studio's tab (offscreen unless a display is set) and once with the
// `stx` program next to this one; rows give the medians and their ratio. The studio runs with settings
// of its own (organisation "stx-studio-bench"), so the user's are never touched.
#include <sys/resource.h>

#include <QAbstractButton>
#include <QApplication>
#include <QCheckBox>
#include <QDoubleSpinBox>
#include <QElapsedTimer>
#include <QLabel>
#include <QProcess>
#include <QRegularExpression>
#include <QSettings>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QTimer>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "audio/audio_tab.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "core/studio_tab.h"
#include "image/image_tab.h"
#include "stx/engine/io/atomic_file.h"
#include "stx/engine/bundled_models.h"
#include "stx/engine/process/process_start.h"
#include "text/text_tab.h"
#include "window/main_window.h"

namespace {

using stx::studio::MainWindow;
using stx::studio::StudioTab;

struct Options {
  std::vector<std::string> kinds = {"audio", "text", "image"};
  int rounds = 3;
  double audio_seconds = 2.0;
  int text_bytes = 800;
  bool live_attention = true;
  std::string stx_path;
  std::string json_path;
};

// Runs the event loop as the studio's own would, idle between events (a loop that polled would take a
// core from the generation it measures), until done() or the timeout.
bool wait_until(const std::function<bool()>& done, int timeout_ms) {
  QElapsedTimer timer;
  timer.start();
  QTimer tick;  // wakes the loop to look at done() again
  tick.start(50);
  while (!done()) {
    if (timer.elapsed() > timeout_ms) return false;
    QApplication::processEvents(QEventLoop::WaitForMoreEvents);
  }
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  if (v.empty()) return 0;
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The tab's controls for a run like the CLI's: live attention on, one sample, the length asked for.
QCheckBox* prepare_tab(StudioTab* tab, const std::string& kind, const Options& o) {
  QCheckBox* live = nullptr;
  stx::studio::SamplingControls* sampling = nullptr;
  if (auto* audio = qobject_cast<stx::studio::AudioTab*>(tab)) {
    audio->durationBox()->setValue(o.audio_seconds);
    live = audio->liveAttentionBox();
    sampling = audio->samplingControls();
  } else if (auto* text = qobject_cast<stx::studio::TextTab*>(tab)) {
    text->bytesToGenerateBox()->setValue(o.text_bytes);
    live = text->liveAttentionBox();
    sampling = text->samplingControls();
  } else if (auto* image = qobject_cast<stx::studio::ImageTab*>(tab)) {
    live = image->liveAttentionBox();
    sampling = image->samplingControls();
  }
  if (sampling != nullptr) sampling->countBox()->setValue(1);  // one sample, as `stx sample` draws by default
  if (live == nullptr) throw std::runtime_error("stx-studio-bench: no " + kind + " tab");
  live->setChecked(o.live_attention);
  return live;
}

double thread_cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_THREAD, &usage);
  return static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
}

struct StudioRun {
  double rate = -1;
  double gui_share = 0;  // CPU time of the GUI thread over the generation's wall time
};

// One generation in the tab; the rate its status bar showed at the end.
StudioRun studio_rate(MainWindow& window, StudioTab* tab) {
  double rate = -1;
  const QMetaObject::Connection c = QObject::connect(
      window.context(), &stx::studio::StudioContext::statusChanged,
      [&](const QObject* from, const QString&, const QString&, double tokens_per_second) {
        if (from == tab && tokens_per_second > 0) rate = tokens_per_second;
      });
  QAbstractButton* generate = nullptr;
  for (QAbstractButton* b : tab->findChildren<QAbstractButton*>()) {
    if (b->text().remove('&') == QStringLiteral("Generate")) generate = b;
  }
  if (generate == nullptr) throw std::runtime_error("stx-studio-bench: the tab has no Generate button");
  const double cpu_before = thread_cpu_seconds();
  QElapsedTimer wall;
  wall.start();
  generate->click();
  wait_until([&] { return tab->busy(); }, 5000);
  const bool done = wait_until([&] { return !tab->busy(); }, 600000);
  QObject::disconnect(c);
  if (!done) throw std::runtime_error("stx-studio-bench: the generation did not end within 10 minutes");
  return {rate, (thread_cpu_seconds() - cpu_before) / (1e-3 * static_cast<double>(wall.elapsed()))};
}

// One `stx sample` of the same kind and length; the rate it printed ("... (N tok/s) ...").
double cli_rate(const Options& o, const std::string& kind, const QTemporaryDir& out) {
  QStringList args = {"sample", QString::fromStdString(kind), "--model", QString::fromStdString(kind), "--force",
                      "--out", out.filePath(QString::fromStdString(kind) + (kind == "audio" ? ".wav" : kind == "text" ? ".txt" : ".png"))};
  if (kind == "audio") args << "--seconds" << QString::number(o.audio_seconds);
  if (kind == "text") args << "--max-bytes" << QString::number(o.text_bytes);
  QProcess stx;
  stx.start(QString::fromStdString(o.stx_path), args);
  if (!stx.waitForFinished(600000) || stx.exitCode() != 0) {
    throw std::runtime_error("stx-studio-bench: " + o.stx_path + " " + args.join(' ').toStdString() + " failed: " +
                             QString::fromUtf8(stx.readAllStandardError()).toStdString());
  }
  const QString said = QString::fromUtf8(stx.readAllStandardError() + stx.readAllStandardOutput());
  const QRegularExpressionMatch m = QRegularExpression(QStringLiteral("\\(([0-9.]+) tok/s\\)")).match(said);
  if (!m.hasMatch()) throw std::runtime_error("stx-studio-bench: no rate in stx's output: " + said.toStdString());
  return m.captured(1).toDouble();
}

}  // namespace

int main(int argc, char** argv) {
  stx::engine::restart_with_short_openmp_spins(argv);
  Options o;
  CLI::App cli{"stx-studio-bench: the studio's generation rate (status bar, live attention on) against stx sample's"};
  cli.add_option("--kind", o.kinds, "audio, text, image (comma list)")
      ->delimiter(',')
      ->check(CLI::IsMember({"audio", "text", "image"}))
      ->capture_default_str();
  cli.add_option("--rounds", o.rounds, "generations on each side")->check(CLI::Range(1, 100))->capture_default_str();
  cli.add_option("--seconds", o.audio_seconds, "audio length")->check(CLI::Range(0.1, 5.0))->capture_default_str();
  cli.add_option("--bytes", o.text_bytes, "text length")->check(CLI::Range(1, 100000))->capture_default_str();
  cli.add_flag("!--no-live-attention", o.live_attention, "generate with the live attention view off");
  cli.add_option("--stx", o.stx_path, "the stx program")->capture_default_str();
  cli.add_option("--json", o.json_path, "also write the rows as JSON to this file");
  o.stx_path = STX_CLI_PATH;
  CLI11_PARSE(cli, argc, argv);

  if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY") &&
      qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    qputenv("QT_QPA_PLATFORM", "offscreen");
  }
  int qt_argc = 1;
  QApplication app(qt_argc, argv);
  QApplication::setOrganizationName(QStringLiteral("stx-studio-bench"));
  QApplication::setApplicationName(QStringLiteral("stx-studio-bench"));
  QSettings().clear();
  QTemporaryDir out;
  MainWindow window;
  window.resize(1280, 820);
  window.show();

  std::printf("stx-studio-bench: %d rounds; tokens/s as the studio's status bar and stx sample report them\n",
              o.rounds);
  std::printf("%-6s  %12s  %12s  %10s  %9s\n", "kind", "studio tok/s", "stx tok/s", "studio/stx", "GUI CPU");
  nlohmann::json rows = nlohmann::json::array();
  try {
    for (const std::string& kind : o.kinds) {
      const auto model = stx::engine::find_bundled_model(kind);
      if (!model) throw std::runtime_error("stx-studio-bench: no bundled " + kind + " model");
      StudioTab* tab = window.tab(QString::fromStdString(kind));
      window.tabs()->setCurrentWidget(tab);
      tab->useModel(QString::fromStdString(model->string()));
      if (!wait_until([&] { return !tab->busy() && window.statusModel()->text().size() > 0; }, 120000)) {
        throw std::runtime_error("stx-studio-bench: the " + kind + " model did not open");
      }
      prepare_tab(tab, kind, o);
      std::vector<double> studio, stx, gui;
      for (int round = 0; round < o.rounds; ++round) {
        const StudioRun run = studio_rate(window, tab);
        studio.push_back(run.rate);
        gui.push_back(run.gui_share);
        stx.push_back(cli_rate(o, kind, out));
      }
      const double s = median(studio), c = median(stx), g = median(gui);
      std::printf("%-6s  %12.0f  %12.0f  %9.2fx  %8.0f%%\n", kind.c_str(), s, c, s / c, 100 * g);
      std::fflush(stdout);
      rows.push_back({{"kind", kind}, {"studio_tokens_per_s", studio}, {"stx_tokens_per_s", stx},
                      {"studio_median", s}, {"stx_median", c}, {"ratio", s / c}, {"gui_thread_cpu_share", g},
                      {"live_attention", o.live_attention}});
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  if (!o.json_path.empty()) {
    stx::engine::write_file_atomic(o.json_path, rows.dump(2) + "\n");
    std::printf("wrote %s\n", o.json_path.c_str());
  }
  return 0;
}
