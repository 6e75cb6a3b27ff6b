// Fixtures for the studio's Qt tests: tiny models of each kind (random weights, a few thousand parameters),
// made by the test itself, and a helper that waits for a condition while the event loop runs.
#pragma once

#include <QString>

#include <functional>

namespace stx::studio::test {

// Writes a tiny model of `kind` ("image": 8x8x1 strided l=8; "text": context 128 fixed l=16 c=4; "audio":
// context 256 strided l=16) into `folder` (created) and returns the folder.
// `temperature` and `min_p` other than 1 and 0 become the model's own sampling defaults (config.json).
QString make_tiny_model(const QString& folder, const QString& kind, double temperature = 1.0, double min_p = 0.0);

// Runs the event loop until `done` is true or `timeoutMs` passes; returns done().
bool wait_until(const std::function<bool()>& done, int timeoutMs = 20000);

}  // namespace stx::studio::test
