// The array types every cpu op takes: Float32Array (fp32 and bf16-emulating modes) or Float64Array (the fp64 oracle).
// Arithmetic runs in JavaScript doubles; a Float32Array output rounds each stored element once to fp32.
export type FloatArray = Float32Array | Float64Array;
