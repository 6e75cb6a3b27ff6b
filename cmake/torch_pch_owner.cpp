// An empty program: it only owns the precompiled LibTorch headers that stx's executables reuse
// (cmake/stx_torch_pch.cmake).
int main() { return 0; }
