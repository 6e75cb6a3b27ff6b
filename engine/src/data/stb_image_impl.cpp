// The stb_image and stb_image_resize implementations, compiled here with our configuration rather than
// linked from Debian's libstb.so (which has every format, stdio and the default dimension cap).
#define STB_IMAGE_IMPLEMENTATION
#define STB_IMAGE_RESIZE_IMPLEMENTATION
#include "stb_config.h"
