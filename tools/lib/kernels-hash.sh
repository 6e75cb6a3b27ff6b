# Sourced by tools/gpu-carry.sh and tools/gpu-check.sh: one hash of everything the kernels library is built
# from (its sources, headers and CMakeLists, by relative path), so that a prebuilt libstx_kernels.a is linked
# only into the tree it was built from.
kernels_source_hash() {  # kernels_source_hash ROOT
  (cd "$1" && find kernels -type f \( -name '*.cpp' -o -name '*.cu' -o -name '*.h' -o -name '*.cuh' -o -name CMakeLists.txt \) |
    LC_ALL=C sort | xargs sha256sum | sha256sum | cut -c1-16)
}
