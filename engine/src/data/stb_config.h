#pragma once
// The one stb_image configuration of the project, shared by the implementation (stb_image_impl.cpp) and its
// users so that declarations and definitions agree. Untrusted input (shared/docs/reliability.md): only the
// four formats we need are compiled in, files are read by us (no stdio), and dimensions are capped.
#define STBI_ONLY_PNG
#define STBI_ONLY_JPEG
#define STBI_ONLY_BMP
#define STBI_ONLY_TGA
#define STBI_NO_STDIO
#define STBI_NO_LINEAR
// 65536 on a side: a larger header is refused by stb itself. Model shapes share the cap.
#define STBI_MAX_DIMENSIONS (1 << 16)

#include "stb_image.h"
#include "stb_image_resize.h"
