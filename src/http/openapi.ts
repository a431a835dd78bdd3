// GET /api/v1/openapi.json: the OpenAPI 3.1 description of every route,
// generated from the routes' TypeBox schemas. No UI is served (no CDN assets
// in a self-hosted binary); point any OpenAPI viewer at the JSON.
import { openapi } from '@elysiajs/openapi';
import type { AppContext } from '../server/context.ts';
import { VERSION } from '../version.ts';

export const openapiRoutes = (_ctx: AppContext) =>
  openapi({
    path: '/api/v1/docs',
    specPath: '/api/v1/openapi.json',
    provider: null,
    documentation: {
      info: {
        title: 'svc',
        version: VERSION,
        description: 'Control plane for background-task workers. Errors use one envelope: {error, message, details, request_id}.',
      },
    },
  });
