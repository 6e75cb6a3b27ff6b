// The parts of the screenshot tour (screenshot_tour.h), one file each: the main window with its tabs and
// dialogs, and the training wizard's pages. Each reports what it could not render to the writer and goes on
// with the rest.
#pragma once

#include <QString>
#include <functional>

namespace stx::studio {

class ScreenshotWriter;

// The bundled models the tour generates with: their folders, empty where one was not found.
struct TourModels {
  QString image, audio, text;
};

// Runs the event loop until done() holds or timeoutMs passes; returns done().
bool wait_until(const std::function<bool()>& done, int timeoutMs);

// window-image ... window-models, window-log-and-error, preferences, about.
void shoot_main_window(ScreenshotWriter& writer, const TourModels& models);

// wizard-data ... wizard-finish: a fine-tuning run of the bundled text model on a small folder made in
// `workFolder`.
void shoot_train_wizard(ScreenshotWriter& writer, const TourModels& models, const QString& workFolder);

}  // namespace stx::studio
