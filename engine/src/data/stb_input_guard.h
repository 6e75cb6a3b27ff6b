#pragma once
// Checks for inputs that Debian's stb_image 2.27 mishandles (the first two found by fuzz_image and fixed upstream
// only later or not at all). Run before any stb_image call on untrusted bytes.
#include <cstddef>
#include <cstdint>

namespace stx::engine::data {

// nullptr when stb_image may be given these bytes, else why not (a phrase for an error message).
//  - A JPEG Huffman table (DHT) declaring more than 256 codes: stb writes past its 257-entry size table
//    (nothings/stb#1289, fixed in 2.28).
//  - A PNG whose first IDAT chunk is empty: stb calls memcpy(NULL, ..., 0), undefined behaviour that lets
//    the compiler drop its later null checks.
//  - A BMP shorter than its header's pixel rows need: stb reads the missing bytes as zeros.
//  - A PNG chunk whose CRC does not match its bytes: stb never checks them.
const char* stb_input_problem(const uint8_t* data, size_t size);

}  // namespace stx::engine::data
