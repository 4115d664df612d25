// exp and log in double precision, operation for operation the same as src/numeric/portable-math.ts: every step an
// explicitly rounded IEEE operation (_rn intrinsics, so nothing is fused into an FMA) and exact power-of-two scaling,
// so the device and the cpu reference give bit-identical results (the sampler's picks depend on them).
#pragma once
#include <stdint.h>

#define PORTABLE_LOG2_E 1.4426950408889634
#define PORTABLE_LN2_HIGH 0.6931471803691238
#define PORTABLE_LN2_LOW 1.9082149292705877e-10
#define PORTABLE_SQRT_2 1.4142135623730951
#define PORTABLE_EXP_TERMS 13
#define PORTABLE_LOG_TERMS 11

// 2^k for −1022 ≤ k ≤ 1023, exact.
__device__ __forceinline__ double portable_power_of_two(int k) {
  return __longlong_as_double((long long)(k + 1023) << 52);
}

// 1/n! for n = 0..13 and 1/(2n + 1) for n = 0..11: the shortest decimal forms of the reference's correctly rounded
// quotients (each literal parses to exactly that double; test/numeric/portable-math.test.ts checks the lists match).
__constant__ double PORTABLE_EXP_COEFFICIENTS[PORTABLE_EXP_TERMS + 1] = {
    1, 1, 0.5, 0.16666666666666666, 0.041666666666666664, 0.008333333333333333, 0.001388888888888889,
    0.0001984126984126984, 0.0000248015873015873, 0.0000027557319223985893, 2.755731922398589e-7,
    2.505210838544172e-8, 2.08767569878681e-9, 1.6059043836821613e-10};
__constant__ double PORTABLE_LOG_COEFFICIENTS[PORTABLE_LOG_TERMS + 1] = {
    1, 0.3333333333333333, 0.2, 0.14285714285714285, 0.1111111111111111, 0.09090909090909091,
    0.07692307692307693, 0.06666666666666667, 0.058823529411764705, 0.05263157894736842, 0.047619047619047616,
    0.043478260869565216};

__device__ __forceinline__ double portable_exp(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384) return __longlong_as_double(0x7ff0000000000000LL);
  if (x < -745.1332191019412) return 0.0;
  const double k = floor(__dadd_rn(__dmul_rn(x, PORTABLE_LOG2_E), 0.5));
  const double r = __dsub_rn(__dsub_rn(x, __dmul_rn(k, PORTABLE_LN2_HIGH)), __dmul_rn(k, PORTABLE_LN2_LOW));
  double polynomial = PORTABLE_EXP_COEFFICIENTS[PORTABLE_EXP_TERMS];
#pragma unroll
  for (int n = PORTABLE_EXP_TERMS - 1; n >= 0; n--)
    polynomial = __dadd_rn(__dmul_rn(polynomial, r), PORTABLE_EXP_COEFFICIENTS[n]);
  const int exponent = (int)k;
  if (exponent < -1000)
    return __dmul_rn(__dmul_rn(polynomial, portable_power_of_two(exponent + 1000)), portable_power_of_two(-1000));
  if (exponent > 1023)
    return __dmul_rn(__dmul_rn(polynomial, portable_power_of_two(1023)), portable_power_of_two(exponent - 1023));
  return __dmul_rn(polynomial, portable_power_of_two(exponent));
}

__device__ __forceinline__ double portable_log(double x) {
  if (isnan(x) || x < 0.0) return __longlong_as_double(0x7ff8000000000000LL);
  if (x == 0.0) return __longlong_as_double(0xfff0000000000000LL);
  if (isinf(x)) return x;
  double value = x;
  int exponent_bias = 0;
  if (value < 2.2250738585072014e-308) {
    value = __dmul_rn(value, 18014398509481984.0);  // 2^54
    exponent_bias = -54;
  }
  const long long bits = __double_as_longlong(value);
  int exponent = (int)((bits >> 52) & 0x7ff) - 1023 + exponent_bias;
  double mantissa = __longlong_as_double((bits & 0x800fffffffffffffLL) | (1023LL << 52));
  if (mantissa > PORTABLE_SQRT_2) {
    mantissa = __dmul_rn(mantissa, 0.5);
    exponent += 1;
  }
  const double f = __dsub_rn(mantissa, 1.0);
  const double s = __ddiv_rn(f, __dadd_rn(2.0, f));
  const double z = __dmul_rn(s, s);
  double series = PORTABLE_LOG_COEFFICIENTS[PORTABLE_LOG_TERMS];
#pragma unroll
  for (int n = PORTABLE_LOG_TERMS - 1; n >= 0; n--)
    series = __dadd_rn(__dmul_rn(series, z), PORTABLE_LOG_COEFFICIENTS[n]);
  const double log_mantissa = __dmul_rn(__dmul_rn(2.0, s), series);
  const double e = (double)exponent;
  return __dadd_rn(__dmul_rn(e, PORTABLE_LN2_HIGH), __dadd_rn(__dmul_rn(e, PORTABLE_LN2_LOW), log_mantissa));
}
