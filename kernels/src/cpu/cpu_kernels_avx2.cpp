// The CPU kernels (attention, decode, activation, small linear) built for the avx2 instruction set (32-byte vectors); see cpu_kernels_impl.h.
#define STX_VEC_BYTES 32
#define STX_CPU_NAMESPACE cpu_avx2
#include "cpu/cpu_kernels_impl.h"
#include "cpu/decode_cpu_impl.h"
#include "cpu/activation_cpu_impl.h"
#include "cpu/small_linear_cpu_impl.h"
