// The frame sampler on the device: one block of SAMPLER_THREADS per lane, the same arithmetic in the same order as
// src/backend/cpu/ops/sampling.ts, so that bit-equal logits give the cpu sampler's picks exactly:
//   x_i = logit_i (NaN as −Inf); m = max x; e_i = portable_exp((x_i − m) / T)   (double)
//   Z: thread j < 256 adds e_j, e_{j+256}, ... in ascending order, then a halving tree over the 256 partials
//   (the cpu's SUM_LANES: the order is the reference's, whatever the block's width)
//   p_i = e_i / Z; the top-k p (descending, ties to the lower index); survivors = shortest prefix whose running
//   sum reaches top-p; pick = argmax p / −portable_log((philox word + 0.5) / 2^32), earlier survivor on ties
// Max, argmax and top-k selection are exact under any reduction order (a total order with index tie-breaks); the only
// rounding sums (Z, the running top-p sum) have one fixed order. Top-k up to 64 is a radix selection; more, or top-k
// off, ranks every candidate with a stable block radix sort. Logits: fp32 (sample_main, sample_code) or bf16
// (the _bf16 entries; widened exactly) [B, count] with a row stride; lanes: the lane table int32
// [B, LANE_TABLE_STRIDE] (the LANE_* fields of src/backend/types.ts); window: int32 [slots, 16], frame f's semantic
// code at entry f mod 16.
//   main: records[b · record_stride] = candidates[chosen], records[b · record_stride + 1] = chosen for a semantic
//         pick (chosen < semantic_count), −1 otherwise (end of speech)
//   code: out[b · out_stride + out_offset] = the chosen index
#include <stdint.h>
#include <cub/block/block_radix_sort.cuh>
#include "common.cuh"
#include "portable_math.cuh"

// Threads of a lane's block (src/backend/cuda/ops/sampler.ts launches this many); every per-candidate loop spreads over
// all of them, and only the normaliser's sum keeps the reference's 256 lanes.
#define SAMPLER_THREADS 512
#define SUM_LANES 256
#define SAMPLER_MAX_COUNT 4352
#define SAMPLER_SELECT_LIMIT 64  // top-k up to this many by radix selection; more (or top-k off) by a full sort
#define RADIX_BINS 256
// The full sort: a block radix sort of SAMPLER_SORT_ITEMS keys a thread (SAMPLER_MAX_COUNT in all), its working
// storage in the dynamic shared memory the launchers pass (SAMPLER_SORT_BYTES, src/backend/cuda/ops/sampler.ts).
#define SAMPLER_SORT_ITEMS 9
#define SAMPLER_SORT_BYTES 36864
// Survivors' probabilities loaded at once by the top-p scan, then added in rank order.
#define SURVIVOR_CHUNK 16
#define RAS_WINDOW 16
#define RAS_TOP_P 0.89999997615814208984375  // float32(0.9)

// kernels/controls/sampler_controls.cu compiles this file again with a deliberate fault and other entry names.
#ifndef SAMPLER_EXTRA_CANDIDATES
#define SAMPLER_EXTRA_CANDIDATES 0
#define SAMPLE_MAIN_ENTRY sample_main
#define SAMPLE_CODE_ENTRY sample_code
#define SAMPLE_MAIN_BF16_ENTRY sample_main_bf16
#define SAMPLE_CODE_BF16_ENTRY sample_code_bf16
#endif
// kernels/controls/sampler_ranking_controls.cu ranks the full sort ascending (the least likely first).
#ifndef SAMPLER_RANKING_ASCENDING
#define SAMPLER_RANKING_ASCENDING 0
#endif

#define LANE_TABLE_STRIDE 9  // LANE_ENTRY and the LANE_* fields of src/backend/types.ts
#define LANE_SLOT 0
#define LANE_FRAME 2
#define LANE_SEED_LOW 3
#define LANE_SEED_HIGH 4
#define LANE_TEMPERATURE 5
#define LANE_TOP_P 6
#define LANE_TOP_K 7
#define LANE_GREEDY 8

struct SamplerShared {
  double probabilities[SAMPLER_MAX_COUNT];
  uint16_t order[SAMPLER_MAX_COUNT];
  // Radix selection: the digit counts of one pass, then the chosen indices in the order they were found.
  unsigned bins[RADIX_BINS];
  double partials[SUM_LANES];
  double best_values[SAMPLER_THREADS / 32];
  int best_indices[SAMPLER_THREADS / 32];
  unsigned warp_counts[SAMPLER_THREADS / 32];
  unsigned long long threshold;  // the limit-th largest probability's bits, found 8 bits a pass from the top
  unsigned needed;               // of the entries whose bits start as the threshold's so far, how many are taken
  unsigned taken;
  int settled;  // every entry that starts as the threshold so far is taken: the remaining passes would change nothing
  int survivors;
  int chosen;
};
static_assert(RADIX_BINS <= SAMPLER_THREADS, "a thread per digit");
static_assert(SUM_LANES <= SAMPLER_THREADS && SUM_LANES >= 64, "the normaliser's lanes are threads; its tree ends in warp 0");

// Sort keys: the bitwise complement of a probability's bits, so that an ascending sort ranks larger probabilities
// first and, being stable over entries held in index order, equal ones by lower index.
typedef cub::BlockRadixSort<unsigned long long, SAMPLER_THREADS, SAMPLER_SORT_ITEMS, uint16_t> ProbabilitySort;
static_assert(SAMPLER_THREADS * SAMPLER_SORT_ITEMS >= SAMPLER_MAX_COUNT, "the sort holds every candidate");
static_assert(sizeof(ProbabilitySort::TempStorage) <= SAMPLER_SORT_BYTES, "the sort's storage fits what is passed");

__device__ __forceinline__ void philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t key0,
                                              uint32_t key1, uint32_t out[4]) {
  uint32_t x0 = c0, x1 = c1, x2 = c2, x3 = c3;
#pragma unroll
  for (int round = 0; round < 10; round++) {
    const uint32_t high0 = __umulhi(0xd2511f53u, x0);
    const uint32_t low0 = 0xd2511f53u * x0;
    const uint32_t high1 = __umulhi(0xcd9e8d57u, x2);
    const uint32_t low1 = 0xcd9e8d57u * x2;
    x0 = high1 ^ x1 ^ key0;
    x1 = low1;
    x2 = high0 ^ x3 ^ key1;
    x3 = low0;
    key0 += 0x9e3779b9u;
    key1 += 0xbb67ae85u;
  }
  out[0] = x0;
  out[1] = x1;
  out[2] = x2;
  out[3] = x3;
}

__device__ __forceinline__ double logit_at(const float* logits, int index) {
  const float value = logits[index];
  return isnan(value) ? -INFINITY : (double)value;
}

// bf16 widens to fp32 exactly, so a bf16 row draws as the same values stored in fp32 would.
__device__ __forceinline__ double logit_at(const bf16* logits, int index) {
  const float value = to_float(logits[index]);
  return isnan(value) ? -INFINITY : (double)value;
}

// Whether (value a, index a) ranks before (value b, index b): larger first, then lower index.
__device__ __forceinline__ bool ranks_before(double a, int a_index, double b, int b_index) {
  return a > b || (a == b && a_index < b_index);
}

// The block's best (value, index) pair; every thread gets it. index < 0 means "none".
__device__ void block_best(double& value, int& index, SamplerShared& shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const double other = __shfl_xor_sync(0xffffffffu, value, offset);
    const int other_index = __shfl_xor_sync(0xffffffffu, index, offset);
    if (other_index >= 0 && (index < 0 || ranks_before(other, other_index, value, index))) {
      value = other;
      index = other_index;
    }
  }
  __syncthreads();
  if (lane == 0) {
    shared.best_values[warp] = value;
    shared.best_indices[warp] = index;
  }
  __syncthreads();
  value = shared.best_values[0];
  index = shared.best_indices[0];
  for (int w = 1; w < SAMPLER_THREADS / 32; w++) {
    const int other_index = shared.best_indices[w];
    if (other_index >= 0 && (index < 0 || ranks_before(shared.best_values[w], other_index, value, index))) {
      value = shared.best_values[w];
      index = other_index;
    }
  }
}

// argmax of the logits, NaN as −Inf, ties to the lower index.
template <typename Logit>
__device__ int argmax_logits(const Logit* logits, int count, SamplerShared& shared) {
  double value = -INFINITY;
  int index = -1;
  for (int i = threadIdx.x; i < count; i += SAMPLER_THREADS) {
    const double candidate = logit_at(logits, i);
    if (index < 0 || ranks_before(candidate, i, value, index)) {
      value = candidate;
      index = i;
    }
  }
  block_best(value, index, shared);
  return index < 0 ? 0 : index;
}

// A probability's bits as an unsigned integer: probabilities are ≥ +0 and not NaN, where the bits order as the values.
__device__ __forceinline__ unsigned long long probability_key(const SamplerShared& shared, int index) {
  return static_cast<unsigned long long>(__double_as_longlong(shared.probabilities[index]));
}

// Inclusive prefix sum of `value` over the block in thread order; every thread gets its own and (in `total`) the
// block's. Holds two barriers.
__device__ __forceinline__ unsigned block_inclusive_sum(unsigned value, unsigned& total, SamplerShared& shared) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  unsigned inclusive = value;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    const unsigned other = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += other;
  }
  if (lane == 31) shared.warp_counts[warp] = inclusive;
  __syncthreads();
  total = 0;
  for (int w = 0; w < SAMPLER_THREADS / 32; w++) {
    const unsigned count = shared.warp_counts[w];
    if (w < warp) inclusive += count;
    total += count;
  }
  __syncthreads();
  return inclusive;
}

// The `limit` largest probabilities (descending, ties to the lower index) into shared.order, for limit ≤ RADIX_BINS:
// the limit-th largest value's leading bits found 8 bits a pass from the top (a digit count per pass), until the
// entries that start with them are exactly the ones still needed (or all 64 bits are found); every entry whose
// leading bits are above them taken and, of those that start with them, the lowest indices; then each taken entry
// placed by counting the taken entries that rank before it. The same list as any exact selection (a strict total
// order), so stopping early changes no pick.
__device__ void select_largest_radix(int count, int limit, SamplerShared& shared) {
  const int t = threadIdx.x;
  if (t == 0) {
    shared.threshold = 0;
    shared.needed = static_cast<unsigned>(limit);
    shared.taken = 0;
    shared.settled = 0;
  }
  unsigned long long mask = 0;
  for (int shift = 56; shift >= 0; shift -= 8) {
    if (t < RADIX_BINS) shared.bins[t] = 0;
    __syncthreads();
    if (shared.settled != 0) break;  // the same value in every thread: read after the barrier
    const unsigned long long prefix = shared.threshold;
    const unsigned needed = shared.needed;
    // Each warp adds its lanes of one digit in one atomic (counts are integers: any grouping gives the same bins);
    // every lane runs every round, so the whole warp takes part in each vote. A warp none of whose keys still match
    // the prefix (most of them after the first digit) skips the costlier match.
    for (int base = 0; base < count; base += SAMPLER_THREADS) {
      const int i = base + t;
      unsigned digit = RADIX_BINS;  // none
      if (i < count) {
        const unsigned long long key = probability_key(shared, i);
        if ((key & mask) == prefix) digit = static_cast<unsigned>((key >> shift) & (RADIX_BINS - 1));
      }
      if (__ballot_sync(0xffffffffu, digit < RADIX_BINS) == 0u) continue;
      const unsigned peers = __match_any_sync(0xffffffffu, digit);
      if (digit < RADIX_BINS && (t & 31) == __ffs(peers) - 1) atomicAdd(&shared.bins[digit], __popc(peers));
    }
    __syncthreads();
    // Thread t < 256 holds digit 255 − t, so its inclusive sum counts the entries at this digit or above; the threads
    // past the digits add nothing.
    const bool holds_digit = t < RADIX_BINS;
    const unsigned digit = holds_digit ? RADIX_BINS - 1 - t : 0u;
    const unsigned here = holds_digit ? shared.bins[digit] : 0u;
    unsigned total;
    const unsigned at_or_above = block_inclusive_sum(here, total, shared);
    const unsigned above = at_or_above - here;
    if (holds_digit && above < needed && at_or_above >= needed) {
      shared.threshold = prefix | (static_cast<unsigned long long>(digit) << shift);
      shared.needed = needed - above;
      shared.settled = at_or_above == needed ? 1 : 0;
    }
    mask |= static_cast<unsigned long long>(RADIX_BINS - 1) << shift;
  }
  __syncthreads();
  const unsigned long long threshold = shared.threshold;
  const unsigned ties_wanted = shared.needed;
  // Entries that start as the threshold go in by index: each thread walks a contiguous run, so ranks follow thread
  // order. `mask` covers the bits found (all 64 unless settled early).
  const int per_thread = (count + SAMPLER_THREADS - 1) / SAMPLER_THREADS;
  const int begin = min(count, t * per_thread);
  const int end = min(count, begin + per_thread);
  unsigned ties = 0;
  for (int i = begin; i < end; i++) ties += (probability_key(shared, i) & mask) == threshold ? 1u : 0u;
  unsigned total_ties;
  unsigned tie_rank = block_inclusive_sum(ties, total_ties, shared) - ties;
  for (int i = begin; i < end; i++) {
    const unsigned long long key = probability_key(shared, i) & mask;
    bool take = key > threshold;
    if (key == threshold) take = tie_rank++ < ties_wanted;
    if (take) shared.bins[atomicAdd(&shared.taken, 1u)] = static_cast<unsigned>(i);
  }
  __syncthreads();
  if (t < limit) {
    const int index = static_cast<int>(shared.bins[t]);
    const double value = shared.probabilities[index];
    int rank = 0;
    for (int j = 0; j < limit; j++) {
      const int other = static_cast<int>(shared.bins[j]);
      rank += ranks_before(shared.probabilities[other], other, value, index) ? 1 : 0;
    }
    shared.order[rank] = static_cast<uint16_t>(index);
  }
}

// Every probability ranked (descending, ties to the lower index) by a block radix sort; the first `limit` ranks into
// shared.order. Thread t holds entries t·ITEMS .. t·ITEMS + ITEMS − 1 (the sort's blocked arrangement), those past
// count as padding keys after every real entry, so the stable sort leaves them last.
__device__ void rank_all(int count, int limit, SamplerShared& shared) {
  extern __shared__ __align__(16) unsigned char sort_storage[];
  unsigned long long keys[SAMPLER_SORT_ITEMS];
  uint16_t indices[SAMPLER_SORT_ITEMS];
#pragma unroll
  for (int item = 0; item < SAMPLER_SORT_ITEMS; item++) {
    const int index = threadIdx.x * SAMPLER_SORT_ITEMS + item;
    const unsigned long long bits = index < count ? probability_key(shared, index) : 0ull;
    keys[item] = SAMPLER_RANKING_ASCENDING ? bits : ~bits;
    indices[item] = static_cast<uint16_t>(index);
  }
  ProbabilitySort(*reinterpret_cast<ProbabilitySort::TempStorage*>(sort_storage)).Sort(keys, indices);
#pragma unroll
  for (int item = 0; item < SAMPLER_SORT_ITEMS; item++) {
    const int rank = threadIdx.x * SAMPLER_SORT_ITEMS + item;
    if (rank < limit) shared.order[rank] = indices[item];
  }
}

// Writes the indices of the `limit` largest probabilities into shared.order (descending, ties to the lower index).
// Any exact selection gives the same list (a total order), so the split into warps does not change the result.
__device__ void select_largest(int count, int limit, SamplerShared& shared) {
  if (limit <= SAMPLER_SELECT_LIMIT) {
    select_largest_radix(count, limit, shared);
  } else {
    rank_all(count, limit, shared);
  }
  __syncthreads();
}

// The top-p cut: the shortest prefix of the ranked candidates whose running sum (added in rank order, as the cpu
// does) reaches top_p, at most limit. One thread adds; each chunk's probabilities are loaded together first.
__device__ int survivors_of(int limit, double top_p, const SamplerShared& shared) {
  int survivors = 0;
  double cumulative = 0.0;
  for (int base = 0; base < limit; base += SURVIVOR_CHUNK) {
    double chunk[SURVIVOR_CHUNK];
#pragma unroll
    for (int j = 0; j < SURVIVOR_CHUNK; j++) {
      chunk[j] = base + j < limit ? shared.probabilities[shared.order[base + j]] : 0.0;
    }
#pragma unroll
    for (int j = 0; j < SURVIVOR_CHUNK; j++) {
      if (base + j < limit) {
        cumulative = __dadd_rn(cumulative, chunk[j]);
        survivors = base + j + 1;
        if (cumulative >= top_p) return survivors;
      }
    }
  }
  return survivors;
}

// One draw (src/backend/cpu/ops/sampling.ts drawFromLogits); every thread returns the pick.
template <typename Logit>
__device__ int draw_from_logits(const Logit* logits, int count, double temperature, double top_p, int top_k,
                                uint32_t seed_low, uint32_t seed_high, uint32_t frame, uint32_t column,
                                uint32_t draw, SamplerShared& shared) {
  // The loops over a thread's entries are unrolled so that their loads and exponentials overlap; each still adds
  // its terms in ascending order.
  double maximum = -INFINITY;
#pragma unroll 4
  for (int i = threadIdx.x; i < count; i += SAMPLER_THREADS) maximum = fmax(maximum, logit_at(logits, i));
  int unused = 0;
  block_best(maximum, unused, shared);
  if (maximum == -INFINITY) return 0;
  if (maximum == INFINITY) return argmax_logits(logits, count, shared);
#pragma unroll 4
  for (int i = threadIdx.x; i < count; i += SAMPLER_THREADS) {
    shared.probabilities[i] = portable_exp(__ddiv_rn(__dsub_rn(logit_at(logits, i), maximum), temperature));
  }
  __syncthreads();
  // Lane j of the sum adds its entries j, j + SUM_LANES, ... in ascending order, as the reference's lanes do.
  if (threadIdx.x < SUM_LANES) {
    double partial = 0.0;
#pragma unroll 4
    for (int i = threadIdx.x; i < count; i += SUM_LANES) partial = __dadd_rn(partial, shared.probabilities[i]);
    shared.partials[threadIdx.x] = partial;
  }
  for (int stride = SUM_LANES / 2; stride >= 32; stride >>= 1) {
    __syncthreads();
    if (threadIdx.x < stride)
      shared.partials[threadIdx.x] = __dadd_rn(shared.partials[threadIdx.x], shared.partials[threadIdx.x + stride]);
  }
  __syncthreads();
  // The tree's last five levels (strides 16 to 1) inside warp 0: lane t adds lane t + stride, the same pairs in the
  // same order as the shared-memory levels, without a barrier each.
  if (threadIdx.x < 32) {
    double sum = shared.partials[threadIdx.x];
#pragma unroll
    for (int stride = 16; stride >= 1; stride >>= 1) sum = __dadd_rn(sum, __shfl_down_sync(0xffffffffu, sum, stride));
    if (threadIdx.x == 0) shared.partials[0] = sum;
  }
  __syncthreads();
  const double total = shared.partials[0];
#pragma unroll 4
  for (int i = threadIdx.x; i < count; i += SAMPLER_THREADS)
    shared.probabilities[i] = __ddiv_rn(shared.probabilities[i], total);
  __syncthreads();
  const int limit = top_k > 0 ? min(top_k + SAMPLER_EXTRA_CANDIDATES, count) : count;
  select_largest(count, limit, shared);
  if (threadIdx.x == 0) shared.survivors = survivors_of(limit, top_p, shared);
  __syncthreads();
  const int survivors = shared.survivors;
  double best_score = -INFINITY;
  int best = -1;
  for (int s = threadIdx.x; s < survivors; s += SAMPLER_THREADS) {
    const int candidate = shared.order[s];
    uint32_t words[4];
    philox4x32_10((uint32_t)candidate >> 2, frame, column, draw, seed_low, seed_high, words);
    // Selected without a run-time index, so `words` stays in registers.
    const int which = candidate & 3;
    const uint32_t word = which == 0 ? words[0] : which == 1 ? words[1] : which == 2 ? words[2] : words[3];
    const double uniform = __dmul_rn(__dadd_rn((double)word, 0.5), 2.3283064365386963e-10);
    const double score = __ddiv_rn(shared.probabilities[candidate], -portable_log(uniform));
    if (best < 0 || score > best_score) {
      best_score = score;
      best = s;
    }
  }
  // Highest score; among equal scores the earlier survivor (lower s): ranks_before on (score, s).
  block_best(best_score, best, shared);
  const int chosen = shared.order[best];
  __syncthreads();
  return chosen;
}

// Column 0: `main` over count candidates (semantic ones below semantic_count), with RAS against the lane's window.
template <typename Logit>
__device__ __forceinline__ void sample_main_lane(int* records, int record_stride, const Logit* logits,
                                                 long long logits_stride, int count, int semantic_count,
                                                 const int* candidates, const int* lanes, int* window,
                                                 SamplerShared& shared) {
  const int* lane = lanes + (long long)blockIdx.x * LANE_TABLE_STRIDE;
  const Logit* row = logits + (long long)blockIdx.x * logits_stride;
  int* lane_window = window + (long long)lane[LANE_SLOT] * RAS_WINDOW;
  const uint32_t frame = (uint32_t)lane[LANE_FRAME];
  int chosen;
  if (lane[LANE_GREEDY] != 0) {
    chosen = argmax_logits(row, count, shared);
  } else {
    const double temperature = (double)__int_as_float(lane[LANE_TEMPERATURE]);
    const double top_p = (double)__int_as_float(lane[LANE_TOP_P]);
    const uint32_t seed_low = (uint32_t)lane[LANE_SEED_LOW];
    const uint32_t seed_high = (uint32_t)lane[LANE_SEED_HIGH];
    const int top_k = lane[LANE_TOP_K];
    chosen = draw_from_logits(row, count, temperature, top_p, top_k, seed_low, seed_high, frame, 0, 0, shared);
    if (threadIdx.x == 0) {
      bool repeated = false;
      if (chosen < semantic_count)
        for (int entry = 0; entry < RAS_WINDOW; entry++) repeated |= lane_window[entry] == chosen;
      shared.chosen = repeated ? 1 : 0;
    }
    __syncthreads();
    if (shared.chosen != 0)
      chosen = draw_from_logits(row, count, 1.0, RAS_TOP_P, top_k, seed_low, seed_high, frame, 0, 1, shared);
    if (threadIdx.x == 0 && chosen < semantic_count) lane_window[frame % RAS_WINDOW] = chosen;
  }
  if (threadIdx.x == 0) {
    int* record = records + (long long)blockIdx.x * record_stride;
    record[0] = candidates[chosen];
    record[1] = chosen < semantic_count ? chosen : -1;
  }
}

// Column 1..9: code[column] over the codebook's count entries.
template <typename Logit>
__device__ __forceinline__ void sample_code_lane(int* out, int out_stride, int out_offset, const Logit* logits,
                                                 long long logits_stride, int count, int column, const int* lanes,
                                                 SamplerShared& shared) {
  const int* lane = lanes + (long long)blockIdx.x * LANE_TABLE_STRIDE;
  const Logit* row = logits + (long long)blockIdx.x * logits_stride;
  int chosen;
  if (lane[LANE_GREEDY] != 0) {
    chosen = argmax_logits(row, count, shared);
  } else {
    chosen = draw_from_logits(row, count, (double)__int_as_float(lane[LANE_TEMPERATURE]),
                              (double)__int_as_float(lane[LANE_TOP_P]), lane[LANE_TOP_K],
                              (uint32_t)lane[LANE_SEED_LOW], (uint32_t)lane[LANE_SEED_HIGH],
                              (uint32_t)lane[LANE_FRAME], (uint32_t)column, 0, shared);
  }
  if (threadIdx.x == 0) out[(long long)blockIdx.x * out_stride + out_offset] = chosen;
}

#define SAMPLE_MAIN_KERNEL(ENTRY, LOGIT)                                                                            \
  extern "C" __global__ void __launch_bounds__(SAMPLER_THREADS, 1)                                                \
      ENTRY(int* records, int record_stride, const LOGIT* logits, long long logits_stride, int count,               \
            int semantic_count, const int* candidates, const int* lanes, int* window) {                             \
    KERNEL_PROLOGUE();                                                                                              \
    __shared__ SamplerShared shared;                                                                              \
    sample_main_lane(records, record_stride, logits, logits_stride, count, semantic_count, candidates, lanes,      \
                     window, shared);                                                                             \
  }

#define SAMPLE_CODE_KERNEL(ENTRY, LOGIT)                                                                            \
  extern "C" __global__ void __launch_bounds__(SAMPLER_THREADS, 1)                                                \
      ENTRY(int* out, int out_stride, int out_offset, const LOGIT* logits, long long logits_stride, int count,      \
            int column, const int* lanes) {                                                                         \
    KERNEL_PROLOGUE();                                                                                              \
    __shared__ SamplerShared shared;                                                                              \
    sample_code_lane(out, out_stride, out_offset, logits, logits_stride, count, column, lanes, shared);           \
  }

SAMPLE_MAIN_KERNEL(SAMPLE_MAIN_ENTRY, float)
SAMPLE_MAIN_KERNEL(SAMPLE_MAIN_BF16_ENTRY, bf16)
SAMPLE_CODE_KERNEL(SAMPLE_CODE_ENTRY, float)
SAMPLE_CODE_KERNEL(SAMPLE_CODE_BF16_ENTRY, bf16)
