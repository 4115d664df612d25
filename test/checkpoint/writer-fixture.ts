// The tensors of test/fixtures/checkpoint/written-by-drama3.pth: our writer's output, which the oracle script loads
// with torch.load(weights_only=True). The test rewrites them and checks the bytes still match the committed file,
// so torch's reading of that file (written-by-drama3.torch.json) stays evidence for the current writer.
// Regenerate after a deliberate writer change: node --import tsx test/checkpoint/writer-fixture.ts OUTPUT.pth
import { type HostTensor, int32ToTensor, makeTensor } from '../../src/checkpoint/tensor.ts';
import { writeTorchCheckpoint } from '../../src/checkpoint/torch-pth.ts';

function fromBits16(bits: readonly number[], dtype: 'BF16' | 'F16', shape: number[]): HostTensor {
  return makeTensor(dtype, shape, new Uint8Array(Uint16Array.from(bits).buffer));
}

function fromBits32(bits: readonly number[], shape: number[]): HostTensor {
  return makeTensor('F32', shape, new Uint8Array(Uint32Array.from(bits).buffer));
}

export function writerFixtureTensors(): Map<string, HostTensor> {
  return new Map<string, HostTensor>([
    // 1, -2.5, smallest subnormal, -0, +Inf, NaN
    [
      'encoder.conv.weight',
      fromBits32([0x3f800000, 0xc0200000, 0x00000001, 0x80000000, 0x7f800000, 0x7fc00000], [2, 3]),
    ],
    // 1, -0, smallest subnormal, -Inf, NaN, largest finite
    ['encoder.norm.weight', fromBits16([0x3f80, 0x8000, 0x0001, 0xff80, 0x7fc0, 0x7f7f], 'BF16', [6])],
    // 1, 65504, smallest subnormal, -0, -Inf, NaN
    ['decoder.alpha', fromBits16([0x3c00, 0x7bff, 0x0001, 0x8000, 0xfc00, 0x7e00], 'F16', [1, 6, 1])],
    // 448, -448, smallest subnormal, -0, 1, NaN, -NaN, 2^-6
    [
      'experts.0.weight',
      makeTensor('F8_E4M3', [2, 4], Uint8Array.from([0x7e, 0xfe, 0x01, 0x80, 0x38, 0x7f, 0xff, 0x08])),
    ],
    ['positions', int32ToTensor([0, -1, 2147483647, -2147483648, 7], 'I64', [5])],
    ['codes', int32ToTensor([3, -4, 5, -6], 'I32', [2, 2])],
    ['mask', int32ToTensor([0, 1, 255], 'U8', [3])],
    ['scale', fromBits32([0x40490fdb], [])],
    ['empty', makeTensor('F32', [0, 3], new Uint8Array(0))],
  ]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await writeTorchCheckpoint(process.argv[2]!, writerFixtureTensors());
}
