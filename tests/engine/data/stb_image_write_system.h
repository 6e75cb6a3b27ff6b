#pragma once
// stb_image_write for the fixtures, included as a system header (what -isystem would do): its C idiom
// `struct s = { 0 };` trips -Wmissing-field-initializers in C++, in third-party code we do not change.
#pragma GCC system_header
#include "stb_image_write.h"
