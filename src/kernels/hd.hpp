#pragma once
// KSUM_HD marks functions compiled for both host and device: a kernel formula is written once.
#if defined(__CUDACC__)
#define KSUM_HD __host__ __device__ __forceinline__
#else
#define KSUM_HD inline
#endif
