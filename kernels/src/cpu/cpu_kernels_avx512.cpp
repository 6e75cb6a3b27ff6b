// The CPU kernels (attention, decode, activation, small linear) built for the avx512 instruction set (64-byte vectors); see cpu_kernels_impl.h.
#define STX_VEC_BYTES 64
#define STX_CPU_NAMESPACE cpu_avx512
#include "cpu/cpu_kernels_impl.h"
#include "cpu/decode_cpu_impl.h"
#include "cpu/activation_cpu_impl.h"
#include "cpu/small_linear_cpu_impl.h"
