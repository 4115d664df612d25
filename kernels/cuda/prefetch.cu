// Asks L2 to hold weights a later kernel of the step reads, while the kernels before it are bound by latency and
// leave the memory idle. Reads nothing into registers and writes nothing, so no output of any kernel can change.
//   prefetch_l2: bytes [base, base + bytes) in pieces of `piece` bytes, one bulk prefetch per piece, the pieces
//   spread over the grid's threads so that many SMs' copy engines issue them.
// base and piece are multiples of 16 bytes (the bulk prefetch's alignment); a last piece shorter than `piece` is
// prefetched to the last whole 16 bytes. Before sm_90 (no bulk prefetch) the kernel does nothing.
#include "common.cuh"

extern "C" __global__ void prefetch_l2(const char* base, long long bytes, int piece) {
  KERNEL_PROLOGUE();
#if __CUDA_ARCH__ >= 900
  const long long pieces = (bytes + piece - 1) / piece;
  const long long threads = (long long)gridDim.x * blockDim.x;
  for (long long index = (long long)blockIdx.x * blockDim.x + threadIdx.x; index < pieces; index += threads) {
    const long long start = index * piece;
    const long long left = bytes - start;
    const unsigned size = (unsigned)((left < piece ? left : piece) & ~15LL);
    if (size == 0) continue;
    const size_t address = __cvta_generic_to_global(base + start);
    asm volatile("cp.async.bulk.prefetch.L2.global [%0], %1;" ::"l"(address), "r"(size) : "memory");
  }
#endif
}
