// The Audio tab against a tiny random audio model (context 256, strided l=16): what a user relies on.
#include <sndfile.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSettings>
#include <QSignalSpy>
#include <QSpinBox>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <memory>

#include "audio/audio_player.h"
#include "audio/audio_tab.h"
#include "audio/playback_bar.h"
#include "audio/waveform_view.h"
#include "core/engine_host.h"
#include "core/job_progress.h"
#include "core/sampling_controls.h"
#include "core/studio_context.h"
#include "studio_test_support.h"
#include "stx/engine/data/audio_io.h"
#include "stx/engine/export/export.h"
#include "stx/engine/pattern_view.h"

using namespace stx::studio;
using stx::studio::test::make_tiny_model;
using stx::studio::test::wait_until;

namespace {

// What a user does in a picker: chooses the entry whose value is `value`.
void pick(QComboBox* box, int value) {
  const int index = box->findData(value);
  QVERIFY2(index >= 0, qPrintable(QString("no entry for %1").arg(value)));
  box->setCurrentIndex(index);
}

// A 12 kHz mono 16-bit WAV of a 440 Hz tone, written with libsndfile as any other program would.
QString write_tone(const QString& path, int frames) {
  SF_INFO info{};
  info.samplerate = 12000;
  info.channels = 1;
  info.format = SF_FORMAT_WAV | SF_FORMAT_PCM_16;
  SNDFILE* file = sf_open(path.toLocal8Bit().constData(), SFM_WRITE, &info);
  if (!file) return {};
  std::vector<float> tone(static_cast<size_t>(frames));
  for (int i = 0; i < frames; ++i)
    tone[static_cast<size_t>(i)] = 0.6f * std::sin(2.0f * 3.14159265f * 440.0f * i / 12000.0f);
  sf_writef_float(file, tone.data(), frames);
  sf_close(file);
  return path;
}

struct WavRead {
  SF_INFO info{};
  QString comment;
  bool ok = false;
};

WavRead read_wav(const QString& path) {
  WavRead wav;
  SNDFILE* file = sf_open(path.toLocal8Bit().constData(), SFM_READ, &wav.info);
  if (!file) return wav;
  if (const char* comment = sf_get_string(file, SF_STR_COMMENT)) wav.comment = QString::fromUtf8(comment);
  std::vector<float> samples(static_cast<size_t>(wav.info.frames * wav.info.channels));
  wav.ok = sf_readf_float(file, samples.data(), wav.info.frames) == wav.info.frames;
  sf_close(file);
  return wav;
}

}  // namespace

class AudioTabTest : public QObject {
  Q_OBJECT

 private:
  QTemporaryDir dir_;
  QString model_;
  StudioContext context_;
  QStringList errors_;

  std::unique_ptr<AudioTab> openTab() {
    auto tab = std::make_unique<AudioTab>(&context_);
    tab->useModel(model_);
    // Ready and idle: the model is announced before its job ends, and Generate does nothing while a job runs
    // (a test that generated at once then saw no run at all, now and then).
    if (!wait_until([&] { return tab->modelReady() && !tab->busy(); })) return nullptr;
    return tab;
  }
  // Generates with the tab's controls and waits for the job to end.
  static bool generateAndWait(AudioTab& tab) {
    tab.generate();
    return wait_until([&] { return !tab.busy(); });
  }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    // Playback goes to ALSA's null device, so that the player is tested on machines without a sound card and
    // tests never make a sound (STX_TEST_AUDIO_DEVICE=1 keeps the real default device). ALSA reads
    // ~/.asoundrc when PortAudio starts, which is at the first AudioPlayer.
    if (qEnvironmentVariableIsEmpty("STX_TEST_AUDIO_DEVICE")) {
      QDir().mkpath(dir_.filePath("home"));
      QFile rc(dir_.filePath("home/.asoundrc"));
      QVERIFY(rc.open(QIODevice::WriteOnly));
      rc.write("pcm.!default { type null }\n");
      rc.close();
      qputenv("HOME", dir_.filePath("home").toLocal8Bit());
    }
    model_ = make_tiny_model(dir_.filePath("tiny-audio"), "audio");
    connect(&context_, &StudioContext::errorShown, this, [this](const QString& m) { errors_ << m; });
  }
  void init() { errors_.clear(); }

  void generationFillsTheWaveformLive() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(0.02);  // 240 bytes: within the context of 256
    tab->samplingControls()->setSampleCount(2);
    QCOMPARE(tab->generationLength(), 240);

    // Every SampleBytes event must already be in the view when the next event arrives.
    EngineWorker* worker = tab->findChild<EngineHost*>()->worker();
    int eventsChecked = 0;
    bool grewLive = true;
    connect(worker, &EngineWorker::sampleBytes, tab.get(), [&](const stx::engine::SampleBytes& b) {
      const Bytes& lane = tab->waveform()->laneBytes(static_cast<int>(b.sample));
      const Bytes tail(b.bytes.begin(), b.bytes.end());
      grewLive = grewLive &&
                 static_cast<qint64>(lane.size()) == b.position + static_cast<qint64>(b.bytes.size()) &&
                 std::equal(tail.begin(), tail.end(), lane.end() - static_cast<std::ptrdiff_t>(tail.size()));
      ++eventsChecked;
    });
    std::vector<Bytes> finished;
    connect(worker, &EngineWorker::sampleFinished, this,
            [&](const stx::engine::SampleResult& r) { finished = r.samples; });

    QVERIFY(generateAndWait(*tab));
    QVERIFY2(errors_.isEmpty(), qPrintable(errors_.join('\n')));
    QVERIFY(eventsChecked > 0);
    QVERIFY(grewLive);
    QCOMPARE(finished.size(), size_t(2));
    QCOMPARE(finished[0].size(), size_t(240));
    QCOMPARE(tab->waveform()->laneCount(), 2);
    QVERIFY(tab->waveform()->lanes() == finished);
    QVERIFY(tab->results() == finished);
    QVERIFY(tab->canExport());
    QVERIFY(tab->progress()->label()->text().contains("Done"));
  }

  void seedShownIsSeedUsed() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(0.01);
    tab->samplingControls()->randomSeedBox()->setChecked(true);
    EngineWorker* worker = tab->findChild<EngineHost*>()->worker();
    uint64_t used = 0;
    connect(worker, &EngineWorker::sampleFinished, this,
            [&](const stx::engine::SampleResult& r) { used = r.seed; });
    QVERIFY(generateAndWait(*tab));
    QCOMPARE(tab->samplingControls()->seedEdit()->text(), QString::number(static_cast<qulonglong>(used)));
    QCOMPARE(*tab->lastSeed(), used);

    // The shown seed, reused, gives the same audio.
    const std::vector<Bytes> first = tab->results();
    tab->samplingControls()->randomSeedBox()->setChecked(false);
    QVERIFY(generateAndWait(*tab));
    QCOMPARE(*tab->lastSeed(), used);
    QVERIFY(tab->results() == first);
  }

  void lengthIsCappedAtTheContext() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(1.0);  // 12,000 bytes asked, the model holds 256
    QCOMPARE(tab->generationLength(), 256);
    QVERIFY(generateAndWait(*tab));
    QVERIFY2(errors_.isEmpty(), qPrintable(errors_.join('\n')));
    QCOMPARE(tab->results().front().size(), size_t(256));
  }

  void stopEndsAGeneration() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(1.0);
    tab->samplingControls()->setSampleCount(8);
    // Stop pressed at once (the tiny model would finish 8 x 256 bytes in milliseconds otherwise): the job
    // stops at its first step and keeps what it made.
    tab->generate();
    QVERIFY(tab->busy());
    QVERIFY(tab->progress()->stopButton()->isEnabled());
    tab->progress()->stopButton()->click();
    QVERIFY(wait_until([&] { return !tab->busy(); }, 20000));
    const QString label = tab->progress()->label()->text();
    QVERIFY2(label.contains("Stopped"), qPrintable(label));
    QVERIFY(!tab->progress()->stopButton()->isEnabled());
    QVERIFY(!tab->results().empty());
    QVERIFY(tab->results().front().size() < 256);
    QVERIFY(tab->waveform()->lanes() == tab->results());
    // The engine is free again: the next run works.
    tab->durationBox()->setValue(0.005);
    tab->samplingControls()->setSampleCount(1);
    QVERIFY(generateAndWait(*tab));
    QCOMPARE(tab->results().front().size(), size_t(60));
  }

  void promptClipStartsEverySample() {
    auto tab = openTab();
    QVERIFY(tab);
    const QString clip = write_tone(dir_.filePath("tone.wav"), 600);
    QVERIFY(!clip.isEmpty());
    QVERIFY(tab->acceptsFile(clip));
    QVERIFY(tab->acceptsFile("x.FLAC"));
    QVERIFY(!tab->acceptsFile("x.png"));
    tab->openFile(clip);
    QVERIFY(wait_until([&] { return !tab->clipLoading(); }));
    QVERIFY2(errors_.isEmpty(), qPrintable(errors_.join('\n')));
    QCOMPARE(tab->clipName(), QString("tone.wav"));

    tab->promptKeepBox()->setValue(0.005);  // 60 bytes of the clip
    const Bytes expected = stx::engine::load_audio_mulaw(clip.toStdString());
    const Bytes prompt(expected.begin(), expected.begin() + 60);
    QVERIFY(tab->promptBytes() == prompt);
    // Before the run the waveform previews the prompt.
    QCOMPARE(tab->waveform()->laneCount(), 1);
    QVERIFY(tab->waveform()->laneBytes(0) == prompt);

    tab->durationBox()->setValue(0.01);
    tab->samplingControls()->setSampleCount(3);
    QCOMPARE(tab->generationLength(), 180);
    QVERIFY(generateAndWait(*tab));
    QCOMPARE(tab->results().size(), size_t(3));
    for (const Bytes& sample : tab->results()) {
      QCOMPARE(sample.size(), size_t(180));
      QVERIFY(std::equal(prompt.begin(), prompt.end(), sample.begin()));
    }
    QCOMPARE(tab->waveform()->promptBytes(), 60);

    // The export says how the sample began.
    const QStringList written = tab->exportTo(dir_.filePath("prompted.wav"), 12000, false);
    QCOMPARE(written.size(), 1);
    const WavRead wav = read_wav(written.front());
    QVERIFY(wav.ok);
    QVERIFY2(wav.comment.contains("clip tone.wav, first 0.005 s"), qPrintable(wav.comment));

    // Keeping more than the context holds is capped, leaving room to generate.
    tab->promptKeepBox()->setValue(10.0);
    QVERIFY(tab->promptBytes().size() < 256);
    QCOMPARE(tab->generationLength(), 256);
  }

  void unreadableClipIsReported() {
    auto tab = openTab();
    QVERIFY(tab);
    const QString missing = dir_.filePath("missing.wav");
    tab->openFile(missing);
    QVERIFY(wait_until([&] { return !tab->clipLoading(); }));
    QCOMPARE(errors_.size(), 1);
    QVERIFY2(errors_.front().contains("missing.wav"), qPrintable(errors_.front()));
    QVERIFY(tab->promptBytes().empty());
    QVERIFY(tab->generateButton()->isEnabled());
  }

  void exportWritesReadableWavs() {
    auto tab = openTab();
    QVERIFY(tab);
    QVERIFY(!tab->canExport());
    tab->durationBox()->setValue(0.02);
    tab->samplingControls()->setSampleCount(2);
    QVERIFY(generateAndWait(*tab));

    for (int rate : stx::engine::kWavOutputRates) {
      const QString path = dir_.filePath(QString("one-%1.wav").arg(rate));
      const QStringList written = tab->exportTo(path, rate, false);
      QCOMPARE(written, QStringList{path});
      const WavRead wav = read_wav(path);
      QVERIFY(wav.ok);
      QCOMPARE(wav.info.samplerate, rate);
      QCOMPARE(wav.info.channels, 1);
      QVERIFY(std::abs(static_cast<double>(wav.info.frames) - 240.0 * rate / 12000.0) <= 2.0);
      QVERIFY2(wav.comment.contains(QString("Seed: %1").arg(*tab->lastSeed())), qPrintable(wav.comment));
      QVERIFY(wav.comment.contains("unconditional"));
      QVERIFY2(wav.comment.contains("Sample: 1 of 2"), qPrintable(wav.comment));  // the selected lane
    }
    // All samples: numbered files, replacing what is there.
    const QString all = dir_.filePath("all.wav");
    QCOMPARE(tab->exportTo(all, 48000, true),
             (QStringList{dir_.filePath("all-1.wav"), dir_.filePath("all-2.wav")}));
    QCOMPARE(tab->exportTo(all, 44100, true).size(), 2);
    QCOMPARE(read_wav(dir_.filePath("all-2.wav")).info.samplerate, 44100);
    QVERIFY(read_wav(dir_.filePath("all-2.wav")).comment.contains("Sample: 2 of 2"));
    // A folder that does not exist: a plain error, nothing thrown.
    QVERIFY(tab->exportTo(dir_.filePath("no/such/folder/x.wav"), 12000, false).isEmpty());
    QCOMPARE(errors_.size(), 1);
    QVERIFY2(errors_.front().contains("x.wav"), qPrintable(errors_.front()));
  }

  void withoutAudioDevicePlayIsDisabledAndGenerationWorks() {
    qputenv("STX_STUDIO_NO_AUDIO", "1");
    auto tab = openTab();
    qunsetenv("STX_STUDIO_NO_AUDIO");
    QVERIFY(tab);
    QVERIFY(!tab->player()->available());
    QVERIFY(!tab->playButton()->isEnabled());
    QVERIFY(tab->playButton()->toolTip().contains(tab->player()->unavailableReason()));
    QVERIFY(!tab->playbackNote()->text().isEmpty());
    tab->durationBox()->setValue(0.01);
    QVERIFY(generateAndWait(*tab));
    QCOMPARE(tab->results().front().size(), size_t(120));
    QVERIFY(!tab->playButton()->isEnabled());
    QVERIFY(tab->canExport());
  }

  void playButtonMatchesTheDevice() {
    // Offscreen CI may or may not have an audio device: the button must agree with the player either way.
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(0.01);
    QVERIFY(generateAndWait(*tab));
    if (tab->player()->available()) {
      QVERIFY(tab->playButton()->isEnabled());
      QVERIFY(tab->playbackNote()->text().isEmpty());
      // Play runs to the end of the sample and hands the buttons back.
      qint64 last = -1;
      connect(tab->player(), &AudioPlayer::positionChanged, this, [&](qint64 frame) { last = frame; });
      tab->playButton()->click();
      QVERIFY(wait_until([&] { return !tab->player()->isPlaying(); }, 5000));
      QCOMPARE(last, qint64(120));
      QVERIFY(tab->playButton()->isEnabled());
      QVERIFY(!tab->stopPlaybackButton()->isEnabled());
      QCOMPARE(tab->waveform()->playhead(), qint64(-1));
    } else {
      QVERIFY(!tab->playButton()->isEnabled());
      QVERIFY(tab->playbackNote()->text().contains(tab->player()->unavailableReason()));
      qInfo("no audio device here: %s", qPrintable(tab->player()->unavailableReason()));
    }
  }

  void playbackFollowsAGrowingSample() {
    // The tab's path: the bar plays the view's selected lane while bytes are still arriving.
    WaveformView view;
    PlaybackBar bar(&view);
    AudioPlayer& player = *bar.player();
    if (!player.available()) QSKIP(qPrintable("no audio device: " + player.unavailableReason()));
    const std::string clip(2400, static_cast<char>(200));  // 0.2 s
    view.reset(1, {}, 2400);
    bar.setGenerating(true);
    QVERIFY(!bar.playButton()->isEnabled());  // nothing to play yet
    view.appendBytes(0, 0, clip.substr(0, 1200));
    bar.appendBytes(0, clip.substr(0, 1200));
    QVERIFY(bar.playButton()->isEnabled());
    bar.playButton()->click();
    // No pace known yet (nothing generated, or a prompt being read): it waits for one instead of guessing,
    // says so, and can be stopped.
    QVERIFY(bar.buffering());
    QVERIFY(!player.isPlaying());
    QVERIFY(bar.stopButton()->isEnabled());
    QVERIFY2(bar.note()->text().contains("pace"), qPrintable(bar.note()->text()));
    bar.setGenerationRate(0, 2400);
    QVERIFY(bar.buffering() && !player.isPlaying());
    // Generating at 100x real time: the lead is all it needs, and the clip is shorter than that, so it
    // waits for the whole of it.
    bar.setGenerationRate(1200000, 2400);
    QVERIFY(bar.buffering() && !player.isPlaying());
    QVERIFY2(bar.note()->text().contains("100"), qPrintable(bar.note()->text()));
    view.appendBytes(0, 1200, clip.substr(1200));
    bar.appendBytes(0, clip.substr(1200));
    // It starts from the cursor as soon as all of it is there, while generation still runs.
    QVERIFY(player.isPlaying());
    QVERIFY(!bar.buffering());
    QVERIFY(bar.note()->text().isEmpty());
    QVERIFY(wait_until([&] { return view.playhead() >= 0; }, 5000));
    bar.setGenerating(false);
    // Then it goes on and stops at the end of what exists.
    QVERIFY(wait_until([&] { return !player.isPlaying(); }, 5000));
    QCOMPARE(player.position(), qint64(2400));
    QCOMPARE(view.playhead(), qint64(-1));
    QVERIFY(bar.playButton()->isEnabled());
    // Stop stops at once.
    bar.playButton()->click();
    bar.stopButton()->click();
    QVERIFY(!player.isPlaying());

    // A new run, no pace known yet: Stop ends the wait, and a run that ends while Play waits plays at once.
    view.reset(1, {}, 2400);
    bar.setGenerating(true);
    view.appendBytes(0, 0, clip.substr(0, 1200));
    bar.appendBytes(0, clip.substr(0, 1200));
    bar.playButton()->click();
    QVERIFY(bar.buffering() && !player.isPlaying());
    bar.stopButton()->click();
    QVERIFY(!bar.buffering() && !player.isPlaying());
    QVERIFY(bar.note()->text().isEmpty());
    bar.playButton()->click();
    QVERIFY(bar.buffering());
    bar.setGenerating(false);
    QVERIFY(!bar.buffering());
    QVERIFY(player.isPlaying());
    QVERIFY(wait_until([&] { return !player.isPlaying(); }, 5000));
    QCOMPARE(player.position(), qint64(1200));
  }

  void framesNeededToPlayKeepPlaybackBehindGeneration() {
    const qint64 second = stx::engine::kSampleRate;
    // What a user relies on: started with that much, playback at 12 kHz never reaches a frame before
    // generation has made it, for rates below, near and above real time, from the start or a cursor.
    for (const double rate : {1000.0, 5000.0, 11000.0, 12000.0, 30000.0}) {
      for (const qint64 from : {qint64{0}, 3 * second}) {
        const qint64 total = 10 * second;
        const qint64 have = stx::studio::frames_needed_to_play(from, total, rate);
        QVERIFY(have >= from && have <= total);
        for (qint64 f = from; f <= total; f += 100) {
          const double made = static_cast<double>(have) + rate * static_cast<double>(f - from) / second;
          QVERIFY2(made >= static_cast<double>(f),
                   qPrintable(QString("rate %1 from %2: frame %3 played before it exists").arg(rate).arg(from).arg(f)));
        }
      }
    }
    // Faster than real time needs only the lead; far slower needs nearly everything.
    QCOMPARE(stx::studio::frames_needed_to_play(0, 10 * second, 30000), second / 4);
    QVERIFY(stx::studio::frames_needed_to_play(0, 10 * second, 1000) > 9 * second);
    QCOMPARE(stx::studio::frames_needed_to_play(0, second, 10), second);  // never more than the sample
  }

  void liveCheckedPlaysWhatOutrunsRealTimeAsItIsGenerated() {
    QVERIFY(!stx::studio::generation_outpaces_playback(13000));  // real time, but not with the margin
    QVERIFY(stx::studio::generation_outpaces_playback(14000));
    WaveformView view;
    PlaybackBar bar(&view);
    AudioPlayer& player = *bar.player();
    if (!player.available()) QSKIP(qPrintable("no audio device: " + player.unavailableReason()));
    QVERIFY(bar.liveBox()->isChecked());  // on unless the user turns it off
    const qint64 total = 24000;  // 2 s
    const std::string clip(static_cast<size_t>(total), static_cast<char>(200));
    const auto run = [&](double rate) {
      view.reset(1, {}, total);
      bar.setGenerating(true);
      view.appendBytes(0, 0, clip.substr(0, 6000));
      bar.appendBytes(0, clip.substr(0, 6000));
      bar.setGenerationRate(rate, total);
    };
    // Slower than real time: nothing plays by itself, and the note says why.
    run(6000);
    QVERIFY(!player.isPlaying() && !bar.buffering());
    QVERIFY2(bar.note()->text().contains("real time"), qPrintable(bar.note()->text()));
    bar.setGenerating(false);
    QVERIFY(bar.note()->text().isEmpty());
    // Two and a half times real time: it plays from the start with no Play pressed.
    run(30000);
    QVERIFY(player.isPlaying());
    QCOMPARE(player.position() <= qint64(6000), true);
    // Stop is kept: the next rate update does not start it again.
    bar.stopButton()->click();
    bar.setGenerationRate(30000, total);
    QVERIFY(!player.isPlaying() && !bar.buffering());
    bar.setGenerating(false);
    // Unchecked, a fast run is not played by itself.
    bar.liveBox()->setChecked(false);
    run(30000);
    QVERIFY(!player.isPlaying() && !bar.buffering());
    bar.setGenerating(false);
  }

  void playWaitsUntilItCanPlayThroughAndBuffersAgainWhenCaughtUp() {
    WaveformView view;
    PlaybackBar bar(&view);
    AudioPlayer& player = *bar.player();
    if (!player.available()) QSKIP(qPrintable("no audio device: " + player.unavailableReason()));
    const qint64 total = 24000;  // 2 s
    const std::string clip(static_cast<size_t>(total), static_cast<char>(200));
    view.reset(1, {}, total);
    bar.setGenerating(true);
    bar.setGenerationRate(6000, total);  // half of real time
    qint64 arrived = 0;
    auto arrive = [&](qint64 upTo) {
      view.appendBytes(0, arrived, clip.substr(static_cast<size_t>(arrived), static_cast<size_t>(upTo - arrived)));
      bar.appendBytes(0, clip.substr(static_cast<size_t>(arrived), static_cast<size_t>(upTo - arrived)));
      arrived = upTo;
    };
    arrive(1200);
    bar.playButton()->click();
    // Too little to play through at half of real time: it waits, says so, and can be stopped.
    const qint64 needed = stx::studio::frames_needed_to_play(0, total, 6000);
    QVERIFY(needed > total / 2);
    QVERIFY(bar.buffering());
    QVERIFY(!player.isPlaying());
    QVERIFY(!bar.playButton()->isEnabled());
    QVERIFY(bar.stopButton()->isEnabled());
    QVERIFY2(bar.note()->text().contains("Buffering"), qPrintable(bar.note()->text()));
    arrive(needed - 1);
    QVERIFY(bar.buffering() && !player.isPlaying());
    QSignalSpy playing(&player, &AudioPlayer::playingChanged);
    arrive(needed);
    QVERIFY(!playing.isEmpty());
    QCOMPARE(playing.first().at(0).toBool(), true);  // it started from the cursor
    QCOMPARE(player.position() <= needed, true);

    // No more bytes come (the rate fell): once playback has caught up, it stops where the user is and
    // buffers again. (ALSA's null device, used here, may take the frames faster than real time.)
    QVERIFY(wait_until([&] { return bar.buffering(); }, 5000));
    QVERIFY(!player.isPlaying());
    const qint64 resumeAt = player.position();
    QVERIFY(resumeAt <= needed);
    QVERIFY2(bar.note()->text().contains("Buffering"), qPrintable(bar.note()->text()));
    // The rate it started on proved too hopeful, so a few more frames are not enough to start again.
    playing.clear();
    arrive(needed + 100);
    QVERIFY(bar.buffering());
    QVERIFY(playing.isEmpty());
    // Generation ends: everything is there, so playback goes on from where it stopped, to the end.
    arrive(total);
    bar.setGenerating(false);
    QVERIFY(!bar.buffering());
    QVERIFY(!playing.isEmpty());
    QVERIFY(bar.note()->text().isEmpty());
    QVERIFY(wait_until([&] { return !player.isPlaying(); }, 5000));
    QCOMPARE(player.position(), total);

    // Stop while buffering cancels the wait.
    view.reset(1, {}, total);
    bar.setGenerating(true);
    bar.setGenerationRate(6000, total);
    arrived = 0;
    arrive(1200);
    bar.playButton()->click();
    QVERIFY(bar.buffering());
    bar.stopButton()->click();
    QVERIFY(!bar.buffering());
    QVERIFY(!player.isPlaying());
    QVERIFY(bar.playButton()->isEnabled());
    arrive(total);
    QVERIFY(!player.isPlaying());  // nothing starts by itself after Stop
  }

  void liveAttentionFollowsThePattern() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(1.0);  // the whole context
    pick(tab->layerBox(), 1);
    pick(tab->headBox(), 1);
    tab->liveAttentionBox()->setChecked(true);
    QVERIFY(generateAndWait(*tab));
    QVERIFY(!tab->liveProbes().empty());
    const stx::engine::PatternSpec spec{"strided", 256, 16, 1};
    for (const stx::engine::AttentionProbe& probe : tab->liveProbes()) {
      QCOMPARE(probe.layer, 1);
      QCOMPARE(probe.head, 1);
      const auto expected =
          stx::engine::attended_positions(spec, stx::engine::PatternPart::both, probe.position);
      QVERIFY2(probe.positions == expected, qPrintable(QString("position %1").arg(probe.position)));
      QCOMPARE(probe.weights.size(), probe.positions.size());
    }
    // The marks drawn are the selected sample's latest probe.
    const stx::engine::AttentionProbe& last = tab->liveProbes().back();
    QCOMPARE(tab->waveform()->attentionLane(), 0);
    QCOMPARE(tab->waveform()->attentionPosition(), last.position);
    QVERIFY(tab->waveform()->attentionPositions() == last.positions);
  }

  void clickingAPointInspectsIt() {
    auto tab = openTab();
    QVERIFY(tab);
    tab->durationBox()->setValue(1.0);
    tab->liveAttentionBox()->setChecked(false);
    tab->samplingControls()->setSampleCount(2);
    tab->resize(1100, 700);
    tab->show();
    QVERIFY(generateAndWait(*tab));
    QVERIFY(tab->liveProbes().empty());

    // Click the middle of the second lane: it is selected and the point inspected.
    WaveformView* view = tab->waveform();
    const QRect lane = view->laneRect(1);
    const QPoint point(lane.center().x(), lane.center().y());
    const qint64 position = view->positionAt(point.x());
    QTest::mouseClick(view, Qt::LeftButton, {}, point);
    QCOMPARE(view->selectedLane(), 1);
    QCOMPARE(view->cursor(), position);
    QVERIFY(wait_until([&] { return !tab->busy() && view->attentionPosition() == position; }));
    QCOMPARE(view->attentionLane(), 1);
    const stx::engine::PatternSpec spec{"strided", 256, 16, 1};
    QVERIFY(view->attentionPositions() ==
            stx::engine::attended_positions(spec, stx::engine::PatternPart::both, position));

    // "All heads (average)": every head inspected and averaged, still over exactly the pattern's positions.
    pick(tab->headBox(), -1);
    QTest::mouseClick(view, Qt::LeftButton, {}, QPoint(point.x() + 30, point.y()));
    QVERIFY(wait_until([&] { return !tab->busy() && view->attentionPosition() == view->cursor(); }));
    const qint64 averaged = view->attentionPosition();
    QVERIFY(view->attentionPositions() ==
            stx::engine::attended_positions(spec, stx::engine::PatternPart::both, averaged));
    double total = 0;
    for (const float w : view->attentionWeights()) total += w;
    QVERIFY2(std::abs(total - 1.0) < 1e-4, qPrintable(QString::number(total)));
    QVERIFY2(errors_.isEmpty(), qPrintable(errors_.join('\n')));
  }

  void settingsRoundTrip() {
    const QString file = dir_.filePath("settings.ini");
    {
      auto tab = openTab();
      QVERIFY(tab);
      tab->durationBox()->setValue(3.25);
      tab->samplingControls()->temperatureBox()->setValue(0.8);
      tab->outputRateBox()->setCurrentIndex(tab->outputRateBox()->findData(44100));
      pick(tab->headBox(), 1);
      QSettings settings(file, QSettings::IniFormat);
      tab->saveSettings(settings);
    }
    AudioTab tab(&context_);
    QSettings settings(file, QSettings::IniFormat);
    tab.restoreSettings(settings);
    QCOMPARE(tab.durationBox()->value(), 3.25);
    QCOMPARE(tab.samplingControls()->temperatureBox()->value(), 0.8);
    QCOMPARE(tab.outputRateBox()->currentData().toInt(), 44100);
    QVERIFY(wait_until([&] { return tab.modelReady(); }));  // the saved model is opened again
    QCOMPARE(tab.headBox()->currentData().toInt(), 1);
  }

  // A model's own sampling defaults fill the controls when it opens, and are what Generate draws with; a
  // setting the user changes afterwards is kept when the same model opens again (a restart), replaced when
  // another model opens, and "Model defaults" brings the model's back.
  void aModelsSamplingDefaultsFillTheControls() {
    const QString tuned = make_tiny_model(dir_.filePath("tuned-audio"), "audio", 1.05, 0.02);
    auto tab = openTab();
    QVERIFY(tab);
    SamplingControls* sampling = tab->samplingControls();
    QCOMPARE(sampling->temperatureBox()->value(), 1.0);
    tab->useModel(tuned);
    QVERIFY(wait_until([&] { return tab->modelReady() && tab->model()->folder == tuned.toStdString() && !tab->busy(); }));
    QCOMPARE(sampling->temperatureBox()->value(), 1.05);
    QCOMPARE(sampling->minPBox()->value(), 0.02);
    QCOMPARE(sampling->settings().min_p, 0.02);

    sampling->temperatureBox()->setValue(1.2);
    const QString file = dir_.filePath("sampling-defaults.ini");
    {
      QSettings settings(file, QSettings::IniFormat);
      tab->saveSettings(settings);
    }
    AudioTab again(&context_);
    {
      QSettings settings(file, QSettings::IniFormat);
      again.restoreSettings(settings);
    }
    QVERIFY(wait_until([&] { return again.modelReady() && !again.busy(); }));
    QCOMPARE(again.samplingControls()->temperatureBox()->value(), 1.2);  // the user's, kept
    again.samplingControls()->modelDefaultsButton()->click();
    QCOMPARE(again.samplingControls()->temperatureBox()->value(), 1.05);

    tab->useModel(model_);
    QVERIFY(wait_until([&] { return tab->modelReady() && tab->model()->folder == model_.toStdString() && !tab->busy(); }));
    QCOMPARE(sampling->temperatureBox()->value(), 1.0);
    QCOMPARE(sampling->minPBox()->value(), 0.0);
    QVERIFY2(errors_.isEmpty(), qPrintable(errors_.join('\n')));
  }

  // A new tab with no model yet: Generate and playback are off.
  void withoutAModelNothingCanBeGeneratedOrPlayed() {
    qputenv("STX_STUDIO_NO_AUDIO", "1");
    AudioTab empty(&context_);
    qunsetenv("STX_STUDIO_NO_AUDIO");
    empty.resize(1000, 560);
    empty.show();
    QTest::qWait(50);
    QVERIFY(!empty.generateButton()->isEnabled());
    QVERIFY(!empty.playButton()->isEnabled());
    QVERIFY(!empty.stopPlaybackButton()->isEnabled());
  }

  // The waveform really shows the generated audio: many pixels in the generated colour, and the prompt's.
  void theWaveformDrawsThePromptAndTheGeneratedAudio() {
    auto tab = openTab();
    QVERIFY(tab);
    const QString clip = write_tone(dir_.filePath("shot-tone.wav"), 1200);
    tab->openFile(clip);
    QVERIFY(wait_until([&] { return !tab->clipLoading(); }));
    tab->promptKeepBox()->setValue(0.006);
    tab->durationBox()->setValue(1.0);
    tab->samplingControls()->setSampleCount(3);
    tab->resize(1280, 760);
    tab->show();
    QVERIFY(generateAndWait(*tab));
    QTest::qWait(100);  // let the coalesced repaint run
    const QImage wave = tab->waveform()->grab().toImage();
    int blue = 0, violet = 0;
    for (int y = 0; y < wave.height(); ++y) {
      for (int x = 0; x < wave.width(); ++x) {
        const QColor c = wave.pixelColor(x, y);
        if (std::abs(c.red() - 52) < 40 && std::abs(c.green() - 101) < 40 && std::abs(c.blue() - 196) < 40)
          ++blue;
        if (std::abs(c.red() - 150) < 40 && std::abs(c.green() - 96) < 40 && std::abs(c.blue() - 200) < 40)
          ++violet;
      }
    }
    QVERIFY2(blue > 500, qPrintable(QString::number(blue)));
    QVERIFY2(violet > 20, qPrintable(QString::number(violet)));
  }
};

QTEST_MAIN(AudioTabTest)
#include "test_audio.moc"
