// Discovery and operations: GET /v1/models (with the speech limits), /health (503 while loading), /metrics,
// /openapi.json and the playground page at /.
import { readFile } from 'node:fs/promises';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { EngineInfo, EngineStats } from '../../engine/protocol.ts';
import { DramaError } from '../../errors.ts';
import { SYNTHETIC_WEIGHTS_NOTICE } from '../../model/config.ts';
import type { ServerContext } from '../context.ts';

const PLACEHOLDER_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>drama3</title></head>
<body><h1>drama3</h1><p>The playground page is not installed yet (no web/index.html).
The API is up: POST /v1/audio/speech, POST /v1/tts, GET /v1/models, GET /openapi.json.</p></body></html>
`;

/** Lane memory: how it is counted, what all lanes may hold and what the running requests leave free. */
function describeMemory(info: EngineInfo, stats: EngineStats) {
  const { memory } = info;
  const free = {
    lane_budget: memory.laneBudget,
    lane_budget_free: memory.laneBudget - (stats.laneMemoryReserved ?? 0),
  };
  if (memory.unit === 'rows') return { counted_in: 'rows', ...free };
  const device = stats.deviceMemory ?? memory.device;
  return {
    counted_in: 'device_bytes',
    ...free,
    bytes_per_prompt_row: memory.bytesPerPromptRow,
    bytes_per_frame: memory.bytesPerFrame,
    fixed_bytes_per_lane: memory.fixedBytesPerLane,
    ...(device === undefined
      ? {}
      : {
          device_limit_bytes: device.limitBytes,
          device_used_bytes: device.usedBytes,
          device_free_bytes: device.limitBytes - device.usedBytes,
        }),
  };
}

function describeModel(info: EngineInfo, stats: EngineStats, created: number) {
  return {
    id: info.modelId,
    object: 'model',
    created,
    owned_by: 'drama3',
    synthetic: info.synthetic,
    ...(info.synthetic ? { notice: SYNTHETIC_WEIGHTS_NOTICE } : {}),
    speech: {
      context_window: info.contextRows,
      max_prompt_rows: info.maxPromptRows,
      max_frames: info.maxFrames,
      memory_rows: info.memoryRows,
      rows_per_lane: info.rowsPerLane,
      max_input_code_points: info.maxInputCodePoints,
      sample_rate: info.sampleRate,
      frame_length: info.frameLength,
      lanes: info.lanes,
      backend: info.backend,
      memory: describeMemory(info, stats),
    },
  };
}

export function operationsRoutes(context: ServerContext, pagePath: URL | undefined): FastifyPluginAsyncTypebox {
  const created = Math.floor(Date.now() / 1000);
  return async (app) => {
    app.get('/v1/models', { schema: { summary: 'Models and their speech limits', tags: ['discovery'] } }, async () => ({
      object: 'list',
      data: [describeModel(context.engine().info, context.engine().stats, created)],
    }));
    app.get(
      '/health',
      { schema: { summary: 'Ready (200), loading or failed (503)', tags: ['operations'] } },
      async (_request, reply) => {
        const failure = context.engine().failure;
        if (failure !== undefined) throw new DramaError('ENGINE_CRASHED', failure, { kind: 'overloaded' });
        return reply.send({ status: 'ready' });
      },
    );
    app.get(
      '/metrics',
      { schema: { summary: 'Prometheus metrics', tags: ['operations'] } },
      async (_request, reply) => {
        const text = await context.metrics.registry.metrics();
        return reply.type(context.metrics.registry.contentType).send(text);
      },
    );
    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
    app.get('/', { schema: { hide: true } }, async (_request, reply) => {
      const page =
        pagePath === undefined ? PLACEHOLDER_PAGE : await readFile(pagePath, 'utf8').catch(() => PLACEHOLDER_PAGE);
      return reply.type('text/html; charset=utf-8').send(page);
    });
  };
}
