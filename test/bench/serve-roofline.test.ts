// The serve bench's roofline rows (bench/support/serve-roofline.ts) on the tiny checkpoint: each client count's step
// bytes are frame-bytes.ts's for that many lanes, the roofline is that many frames per step at the bandwidth given,
// and the PyTorch step figure stands only beside the batches it was measured at.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { stepBytes } from '../../bench/support/frame-bytes.ts';
import { PYTORCH_BASELINE } from '../../bench/support/frames-report.ts';
import { serveRoofline } from '../../bench/support/serve-roofline.ts';
import { candidateIds } from '../../src/model/candidates.ts';
import { loadConfig } from '../../src/model/config.ts';
import { syntheticDeviceSpecs } from '../../src/synth/device-model.ts';
import { tinyCheckpointDir } from '../model/tiny-checkpoint.ts';

test('serve roofline rows: the step of that many lanes at the measured bandwidth, PyTorch at batches 1 and 64', async () => {
  const dir = await tinyCheckpointDir();
  const bandwidth = { bytes: 2 ** 30, milliseconds: 0.5, gigabytesPerSecond: 4000 };
  const served = [1, 8, 64].map((clients) => ({ clients, framesPerSecond: 10 * clients }));
  const rows = await serveRoofline(dir, served, 32, bandwidth);
  const { config } = await loadConfig(dir);
  const candidates = (await candidateIds(dir, config)).ids.length;
  for (const [index, row] of rows.entries()) {
    const bytes = stepBytes(config, syntheticDeviceSpecs(config), candidates, served[index]!.clients, 32);
    assert.equal(row.stepBytes, bytes.weights + bytes.state);
    assert.ok(
      Math.abs(row.rooflineFramesPerSecond - (row.clients * 4e12) / row.stepBytes) < 1e-6 * row.rooflineFramesPerSecond,
    );
    assert.equal(row.framesPerSecond, 10 * row.clients);
  }
  assert.ok(rows[2]!.stepBytes > rows[0]!.stepBytes, 'more lanes read more state and experts');
  assert.deepEqual(
    rows.map((row) => row.pytorchFramesPerSecond),
    [PYTORCH_BASELINE.batch1.framesPerSecond, undefined, PYTORCH_BASELINE.batch64.framesPerSecond],
  );
});
