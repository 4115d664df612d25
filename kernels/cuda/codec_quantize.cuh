// Device code of the codec's quantizer encode (codec_quantize.cu says what it computes). The kernel is a template over
// a planted fault, so that the contract's controls (kernels/controls/codec_quantize_controls.cu) differ from the real
// kernel in exactly one place. Every step rounds through an explicit intrinsic (no contraction) so that the fp64 and
// fp32 arithmetic is Quantizer.encode's (src/codec/quantizer.ts) operation for operation.
#pragma once
#include "common.cuh"

enum CodecQuantizeFault {
  CODEC_QUANTIZE_FAULT_NONE = 0,
  CODEC_QUANTIZE_FAULT_TIES_LAST = 1,
  CODEC_QUANTIZE_FAULT_RESIDUAL_KEPT = 2,
};

constexpr int CODEC_QUANTIZE_THREADS = 256;

// The two smallest distances seen so far (as a multiset, NaN never counted) and where the smallest is.
struct NearestPair {
  double best;
  double second;
  int index;
};

// Quantizer.encode's scan step: a smaller distance takes the lead (the first smallest wins a tie; the control takes
// the last), the old lead becoming the runner-up.
template <int FAULT>
__device__ __forceinline__ void nearest_step(NearestPair& pair, double distance, int entry) {
  const bool leads = FAULT == CODEC_QUANTIZE_FAULT_TIES_LAST ? distance <= pair.best : distance < pair.best;
  if (leads) {
    pair.second = pair.best;
    pair.best = distance;
    pair.index = entry;
  } else if (distance < pair.second) {
    pair.second = distance;
  }
}

// Two threads' pairs as one scan over both would leave them: the smaller best (the lower entry on a tie), and the
// smallest of the other best and both runners-up. Exact, so the order of the merges changes nothing.
template <int FAULT>
__device__ __forceinline__ NearestPair nearest_merge(const NearestPair& a, const NearestPair& b) {
  const bool a_leads = a.best < b.best || (a.best == b.best && (FAULT == CODEC_QUANTIZE_FAULT_TIES_LAST
                                                                    ? a.index > b.index
                                                                    : a.index < b.index));
  const NearestPair& lead = a_leads ? a : b;
  const NearestPair& other = a_leads ? b : a;
  double second = lead.second < other.best ? lead.second : other.best;
  if (other.second < second) second = other.second;
  return {lead.best, second, lead.index};
}

// The block's pairs merged: a shared-memory tree over the threads (fixed, though any order gives the same result).
template <int FAULT>
__device__ __forceinline__ NearestPair block_nearest(NearestPair pair, NearestPair* scratch) {
  scratch[threadIdx.x] = pair;
  __syncthreads();
  for (int half = CODEC_QUANTIZE_THREADS / 2; half > 0; half >>= 1) {
    if (threadIdx.x < half) {
      scratch[threadIdx.x] = nearest_merge<FAULT>(scratch[threadIdx.x], scratch[threadIdx.x + half]);
    }
    __syncthreads();
  }
  const NearestPair result = scratch[0];
  __syncthreads();
  return result;
}

// Quantizer.encode's normalise: x / max(fround(sqrt(Σ x²)), 1e-12), the squares summed in fp64 in index order, the
// quotient in fp64 rounded once (Math.max: a NaN norm stays NaN).
__device__ __forceinline__ void normalise_row(const float* values, float* out, int dim) {
  double squares = 0.0;
  for (int d = 0; d < dim; d++) squares = __dadd_rn(squares, __dmul_rn((double)values[d], (double)values[d]));
  const double rounded = (double)__double2float_rn(__dsqrt_rn(squares));
  const double norm = isnan(rounded) || rounded > 1e-12 ? rounded : 1e-12;
  for (int d = 0; d < dim; d++) out[d] = __double2float_rn(__ddiv_rn((double)values[d], norm));
}

// One frame per block (strided over frames): the residual starts as the frame's latent row; per codebook, in_proj,
// normalise, the nearest normalised entry, then the straight-through value's out_proj subtracted from the residual.
template <int FAULT>
__device__ __forceinline__ void quantizer_encode(int* codes, double* margins, const float* z, int frames, int latent,
                                                 int dim, int codebooks, int semantic_size, int residual_size,
                                                 const float* in_weights, const float* in_biases,
                                                 const float* entries, const float* normalised,
                                                 const double* squares, const float* out_weights,
                                                 const float* out_biases) {
  extern __shared__ float shared[];
  __shared__ NearestPair scratch[CODEC_QUANTIZE_THREADS];
  __shared__ double encoded_square;
  float* residual = shared;
  float* encoded = residual + latent;
  float* unit = encoded + dim;
  float* straight = unit + dim;
  for (int frame = blockIdx.x; frame < frames; frame += gridDim.x) {
    __syncthreads();
    for (int c = threadIdx.x; c < latent; c += blockDim.x) residual[c] = z[(long long)frame * latent + c];
    __syncthreads();
    for (int codebook = 0; codebook < codebooks; codebook++) {
      const int size = codebook == 0 ? semantic_size : residual_size;
      const long long first_entry = codebook == 0 ? 0 : semantic_size + (long long)(codebook - 1) * residual_size;
      // in_proj: each of the dim sums from its bias over the latent channels in order, in fp64, rounded once.
      for (int d = threadIdx.x; d < dim; d += blockDim.x) {
        const float* row = in_weights + ((long long)codebook * dim + d) * latent;
        double sum = in_biases[(long long)codebook * dim + d];
        for (int c = 0; c < latent; c++) sum = __dadd_rn(sum, __dmul_rn((double)row[c], (double)residual[c]));
        encoded[d] = __double2float_rn(sum);
      }
      __syncthreads();
      if (threadIdx.x == 0) {
        normalise_row(encoded, unit, dim);
        double square = 0.0;
        for (int d = 0; d < dim; d++) square = __dadd_rn(square, __dmul_rn((double)unit[d], (double)unit[d]));
        encoded_square = square;
      }
      __syncthreads();
      NearestPair pair = {INFINITY, INFINITY, 0};
      for (int entry = threadIdx.x; entry < size; entry += blockDim.x) {
        const float* candidate = normalised + (first_entry + entry) * dim;
        double dot = 0.0;
        for (int d = 0; d < dim; d++) dot = __dadd_rn(dot, __dmul_rn((double)unit[d], (double)candidate[d]));
        const double distance = __dadd_rn(__dsub_rn(encoded_square, __dmul_rn(2.0, dot)), squares[first_entry + entry]);
        nearest_step<FAULT>(pair, distance, entry);
      }
      const NearestPair nearest = block_nearest<FAULT>(pair, scratch);
      if (threadIdx.x == 0) {
        codes[(long long)frame * codebooks + codebook] = nearest.index;
        margins[(long long)frame * codebooks + codebook] = __dsub_rn(nearest.second, nearest.best);
      }
      // The straight-through value z_e + fround(entry − z_e), each step rounded to fp32.
      for (int d = threadIdx.x; d < dim; d += blockDim.x) {
        const float value = entries[(first_entry + nearest.index) * dim + d];
        straight[d] = __fadd_rn(encoded[d], __fsub_rn(value, encoded[d]));
      }
      __syncthreads();
      // out_proj from its bias over the dims in order, in fp64, rounded once; subtracted from the residual in fp32.
      for (int c = threadIdx.x; c < latent; c += blockDim.x) {
        const float* row = out_weights + ((long long)codebook * latent + c) * dim;
        double sum = out_biases[(long long)codebook * latent + c];
        for (int d = 0; d < dim; d++) sum = __dadd_rn(sum, __dmul_rn((double)row[d], (double)straight[d]));
        if (FAULT != CODEC_QUANTIZE_FAULT_RESIDUAL_KEPT) residual[c] = __fsub_rn(residual[c], __double2float_rn(sum));
      }
      __syncthreads();
    }
  }
}

// Entry point, shared by the real kernel and the controls.
#define CODEC_QUANTIZER_ENCODE_ENTRY(name, FAULT)                                                                   \
  extern "C" __global__ void __launch_bounds__(CODEC_QUANTIZE_THREADS)                                              \
      name(int* codes, double* margins, const float* z, int frames, int latent, int dim, int codebooks,             \
           int semantic_size, int residual_size, const float* in_weights, const float* in_biases,                   \
           const float* entries, const float* normalised, const double* squares, const float* out_weights,          \
           const float* out_biases) {                                                                               \
    KERNEL_PROLOGUE();                                                                                              \
    quantizer_encode<FAULT>(codes, margins, z, frames, latent, dim, codebooks, semantic_size, residual_size,        \
                            in_weights, in_biases, entries, normalised, squares, out_weights, out_biases);          \
  }
