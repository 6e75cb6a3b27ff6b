// The CPU kernels (attention, decode, activation, small linear) built for the portable instruction set (16-byte vectors); see cpu_kernels_impl.h.
#define STX_VEC_BYTES 16
#define STX_CPU_NAMESPACE cpu_portable
#include "cpu/cpu_kernels_impl.h"
#include "cpu/decode_cpu_impl.h"
#include "cpu/activation_cpu_impl.h"
#include "cpu/small_linear_cpu_impl.h"
