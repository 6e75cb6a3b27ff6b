// The one definition of stb_image_write, used by the image fixtures.
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include "stb_image_write_system.h"
