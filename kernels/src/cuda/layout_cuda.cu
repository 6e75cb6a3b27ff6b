// Uploads a Layout's block lists, masks and work items to the device once per device, counts devices, and
// counts the nodes of a graph being captured.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "cuda/cuda_common.cuh"

namespace stx::kernels::detail {

int cuda_device_count() {
  int count = 0;
  // No driver, no device, or a driver too old for this runtime: all mean "no CUDA here".
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();  // clear the error so that later calls start clean
    return 0;
  }
  return count;
}

std::string cuda_device_name(int index) {
  cudaDeviceProp properties{};
  if (cudaGetDeviceProperties(&properties, index) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  return properties.name;
}

int64_t cuda_captured_nodes(void* stream) {
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  cudaGraph_t graph = nullptr;
  if (cudaStreamGetCaptureInfo(static_cast<cudaStream_t>(stream), &status, nullptr, &graph) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  size_t nodes = 0;
  if (status != cudaStreamCaptureStatusActive || graph == nullptr ||
      cudaGraphGetNodes(graph, nullptr, &nodes) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return static_cast<int64_t>(nodes);
}

DeviceLayout::~DeviceLayout() {
  if (memory == nullptr) return;
  int current = 0;
  const bool switched = cudaGetDevice(&current) == cudaSuccess && current != device;
  if (switched) cudaSetDevice(device);
  // At process exit the runtime may be gone already; there is nothing useful to do with an error then.
  cudaFree(memory);
  if (switched) cudaSetDevice(current);
}

namespace {

// What Layout::device_copy points to: one DeviceLayout per device the layout was used on.
struct DeviceLayoutCache {
  std::map<int, std::unique_ptr<DeviceLayout>> by_device;
};

// Lays out typed arrays back to back in one host buffer, 16-byte aligned, to be copied in one go.
class Packer {
 public:
  template <class T>
  size_t add(const T* data, size_t count) {
    const size_t offset = (bytes_.size() + 15) / 16 * 16;
    bytes_.resize(offset + count * sizeof(T));
    if (count > 0) std::memcpy(bytes_.data() + offset, data, count * sizeof(T));
    return offset;
  }
  template <class T>
  size_t add(const std::vector<T>& v) {
    return add(v.data(), v.size());
  }
  std::vector<unsigned char>& bytes() { return bytes_; }

 private:
  std::vector<unsigned char> bytes_;
};

struct PartOffsets {
  size_t row_begin, row_key, row_mask, col_begin, col_query, col_mask, masks;
  int64_t step, mask_words;
  int32_t block;
};

std::unique_ptr<DeviceLayout> upload(const Layout& layout, int device) {
  const int64_t n = layout.n;
  const int64_t B = layout.block;
  Packer packer;
  std::vector<PartOffsets> offsets;

  // Every unique head's parts, in order; first_part[u] is the index of unique head u's first part.
  std::vector<int32_t> first_part;
  for (const HeadLayout& head : layout.unique) {
    first_part.push_back(static_cast<int32_t>(offsets.size()));
    for (const LayoutPart& part : head.parts) {
      offsets.push_back({packer.add(part.row_begin), packer.add(part.row_key), packer.add(part.row_mask),
                         packer.add(part.col_begin), packer.add(part.col_query), packer.add(part.col_mask),
                         packer.add(part.masks), part.step, part.mask_words,
                         static_cast<int32_t>(part.block)});
    }
  }
  // A head with no parts at all (fixed A2 alone with n before the first summary cell) still needs its
  // rows written (out = 0, lse = -inf, zero gradients): it gets one natural part with empty lists.
  const int64_t natural_blocks = (n + B - 1) / B;
  const std::vector<int64_t> empty_begin(static_cast<size_t>(natural_blocks + 1), 0);
  const size_t empty_offset = packer.add(empty_begin);
  const int32_t empty_part = static_cast<int32_t>(offsets.size());
  offsets.push_back({empty_offset, empty_offset, empty_offset, empty_offset, empty_offset, empty_offset,
                     empty_offset, 1, 1, static_cast<int32_t>(B)});

  // The work items of each slot: every lane's blocks that hold at least one position.
  size_t slots = 1;
  for (int h = 0; h < layout.num_heads(); ++h) slots = std::max(slots, layout.head(h).parts.size());
  std::vector<std::vector<WorkItem>> items(slots);
  for (int h = 0; h < layout.num_heads(); ++h) {
    const HeadLayout& head = layout.head(h);
    const size_t parts = head.parts.size();
    if (parts == 0) {
      for (int64_t b = 0; b < natural_blocks; ++b)
        items[0].push_back({h, empty_part, 0, static_cast<int32_t>(b), kFirstPart | kLastPart});
      continue;
    }
    for (size_t s = 0; s < parts; ++s) {
      const LayoutPart& part = head.parts[s];
      const int32_t index = first_part[layout.head_to_unique[h]] + static_cast<int32_t>(s);
      const int32_t flags = (s == 0 ? kFirstPart : 0) | (s + 1 == parts ? kLastPart : 0);
      for (int64_t lane = 0; lane < part.lanes; ++lane) {
        const int64_t blocks = (lane_length(n, lane, part.step) + B - 1) / B;
        for (int64_t b = 0; b < blocks; ++b)
          items[s].push_back({h, index, static_cast<int32_t>(lane), static_cast<int32_t>(b), flags});
      }
    }
  }
  std::vector<size_t> item_offsets;
  for (const auto& slot : items) item_offsets.push_back(packer.add(slot));
  // The part table holds device pointers, so it is filled in once the allocation's address is known.
  const size_t parts_offset = packer.add(std::vector<DevicePart>(offsets.size()));

  auto result = std::make_unique<DeviceLayout>();
  result->device = device;
  std::vector<unsigned char>& bytes = packer.bytes();
  STX_CUDA_CHECK(cudaMalloc(&result->memory, bytes.size()));
  const unsigned char* base = static_cast<const unsigned char*>(result->memory);
  std::vector<DevicePart> table;
  for (const PartOffsets& o : offsets) {
    table.push_back({o.step, o.mask_words, o.block, reinterpret_cast<const int64_t*>(base + o.row_begin),
                     reinterpret_cast<const int32_t*>(base + o.row_key),
                     reinterpret_cast<const int32_t*>(base + o.row_mask),
                     reinterpret_cast<const int64_t*>(base + o.col_begin),
                     reinterpret_cast<const int32_t*>(base + o.col_query),
                     reinterpret_cast<const int32_t*>(base + o.col_mask),
                     reinterpret_cast<const uint64_t*>(base + o.masks)});
  }
  std::memcpy(bytes.data() + parts_offset, table.data(), table.size() * sizeof(DevicePart));
  STX_CUDA_CHECK(cudaMemcpy(result->memory, bytes.data(), bytes.size(), cudaMemcpyHostToDevice));
  // A pageable copy may still be in flight when cudaMemcpy returns, and kernels may run on a
  // non-blocking stream that does not wait for it: wait once here, on first use of the layout.
  STX_CUDA_CHECK(cudaDeviceSynchronize());

  result->parts = reinterpret_cast<const DevicePart*>(base + parts_offset);
  for (size_t s = 0; s < slots; ++s) {
    result->slot_items.push_back(reinterpret_cast<const WorkItem*>(base + item_offsets[s]));
    result->slot_count.push_back(static_cast<int64_t>(items[s].size()));
  }
  result->multi_part = slots > 1;
  return result;
}

}  // namespace

const DeviceLayout& device_layout(const Layout& layout) {
  int device = 0;
  STX_CUDA_CHECK(cudaGetDevice(&device));
  std::lock_guard<std::mutex> lock(layout.device_mutex);
  if (!layout.device_copy) layout.device_copy = std::make_shared<DeviceLayoutCache>();
  auto& cache = static_cast<DeviceLayoutCache*>(layout.device_copy.get())->by_device;
  auto it = cache.find(device);
  if (it == cache.end()) it = cache.emplace(device, upload(layout, device)).first;
  return *it->second;
}

}  // namespace stx::kernels::detail
