// libFuzzer target for the safetensors reader: any bytes must either parse into tensors whose data lies
// inside the file, or be refused with stx::engine::Error. Anything else (a crash, a sanitizer report,
// another exception type) is a bug.
//   ./fuzz_safetensors -max_total_time=60 corpus/
#include <cstddef>
#include <cstdint>
#include <vector>

#include "stx/engine/io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using stx::engine::SafetensorsFile;
  try {
    const SafetensorsFile file = SafetensorsFile::parse(std::vector<uint8_t>(data, data + size), "fuzz");
    for (const stx::engine::TensorInfo& tensor : file.tensors()) {
      // Reading every byte lets ASan catch a tensor that points outside the buffer.
      const uint8_t* bytes = file.data(tensor);
      volatile uint8_t sum = 0;
      for (uint64_t i = 0; i < tensor.nbytes(); ++i) sum = sum + bytes[i];
      try {
        file.check_finite(tensor);
      } catch (const stx::engine::Error&) {
      }
    }
  } catch (const stx::engine::Error&) {
  }
  return 0;
}
