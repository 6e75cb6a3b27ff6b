// The audio byte codec for the engine's users (the front ends): the project's one mu-law codec lives in
// models (stx/models/mulaw.h, the torch-free library stx_mulaw), the lowest layer that reads it.
#pragma once

#include "stx/models/mulaw.h"

namespace stx::engine {

using models::mulaw_amplitude_table;
using models::mulaw_decode;
using models::mulaw_encode;

}  // namespace stx::engine
