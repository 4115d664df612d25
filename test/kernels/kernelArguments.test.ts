// Kernel parameter tables and the ptxas report reader: both run without a GPU. The table is read back through the
// addresses the driver would follow, so a wrong slot, width or byte order fails here rather than on the device.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import v8 from 'node:v8';
import vm from 'node:vm';
import koffi from 'koffi';
import { parsePtxasReport } from '../../scripts/kernel-files.ts';
import { KernelArguments } from '../../src/backend/cuda/kernelArguments.ts';

test('each argument sits in its own slot, where the address table points', () => {
  const args = new KernelArguments(4)
    .pointer(0x7f00_1234_5678n)
    .int32(-5)
    .float32(1.5)
    .int64(2 ** 40 + 3);
  const table = args.parameters;
  assert.equal(table[1]! - table[0]!, 8n);
  assert.equal(BigInt(koffi.decode(table[0]!, 'uint64_t') as number | bigint), 0x7f00_1234_5678n);
  assert.equal(koffi.decode(table[1]!, 'int32_t'), -5);
  assert.equal(koffi.decode(table[2]!, 'float'), 1.5);
  assert.equal(BigInt(koffi.decode(table[3]!, 'int64_t') as number | bigint), BigInt(2 ** 40 + 3));
  assert.deepEqual(args.sizes, [8, 4, 4, 8], 'the byte size of each argument, for the layout check');
  assert.throws(() => args.int32(1), /more than 4 kernel arguments/);
});

test('a kept address table keeps its slots: read after collections, the values are still there', () => {
  v8.setFlagsFromString('--expose-gc');
  const collect = vm.runInNewContext('gc') as () => void;
  // Only the tables are kept, as a launch recorder keeps them to read later.
  const tables = Array.from(
    { length: 200 },
    (_, index) => new KernelArguments(4).int32(index).int64(-index).parameters,
  );
  for (let round = 0; round < 3; round++) {
    collect();
    // Fresh slots of other values, which a collected table's memory would be handed to.
    for (let index = 0; index < 2000; index++) new KernelArguments(4).int32(-1).int64(-1);
  }
  tables.forEach((table, index) => {
    assert.equal(koffi.decode(table[0]!, 'int32_t'), index);
    assert.equal(BigInt(koffi.decode(table[1]!, 'int64_t') as number | bigint), BigInt(-index));
  });
});

test('the ptxas report becomes one line per entry function', () => {
  const report = [
    "ptxas info    : Compiling entry function 'rms_norm_bf16' for 'sm_90a'",
    'ptxas info    : Function properties for rms_norm_bf16',
    '    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads',
    'ptxas info    : Used 20 registers, used 1 barriers, 128 bytes smem',
    "ptxas info    : Compiling entry function 'rope_bf16' for 'sm_90a'",
    '    40 bytes stack frame, 4 bytes spill stores, 8 bytes spill loads',
    'ptxas info    : Used 40 registers, used 0 barriers, 40 bytes cumulative stack size',
    "ptxas info    : Compiling entry function 'rope_bf16' for 'sm_80'",
    'ptxas info    : Used 38 registers',
  ].join('\n');
  assert.deepEqual(parsePtxasReport(report), [
    { name: 'rms_norm_bf16', stackBytes: 0, spillBytes: 0, registers: 20, sharedBytes: 128 },
    { name: 'rope_bf16', stackBytes: 40, spillBytes: 12, registers: 40, sharedBytes: 0 },
  ]);
});
