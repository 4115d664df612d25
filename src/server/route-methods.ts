// Which methods each registered path answers, so a request on a known path with another method is told 405 and the
// methods it may use (Allow), not 404 as if the path did not exist.
import type { RouteOptions } from 'fastify';

export interface RouteMethods {
  /** Takes every route as fastify registers it (an onRoute hook). */
  add(route: Pick<RouteOptions, 'method' | 'url'>): void;
  /** The methods registered for a path (its query ignored), sorted; empty when no route has this path. */
  allowed(url: string): readonly string[];
}

export function routeMethods(): RouteMethods {
  const routes: { readonly path: RegExp; readonly methods: readonly string[] }[] = [];
  return {
    add(route) {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      routes.push({ path: pathPattern(route.url), methods: methods.map(String) });
    },
    allowed(url) {
      const path = url.split('?', 1)[0] ?? '';
      const methods = new Set<string>();
      for (const route of routes) if (route.path.test(path)) for (const method of route.methods) methods.add(method);
      return [...methods].sort();
    },
  };
}

/** `/v1/audio/voices/:id` → a pattern matching one segment for each parameter; `*` matches the rest. */
function pathPattern(url: string): RegExp {
  const escaped = url
    .split(/(:[A-Za-z0-9_]+|\*)/)
    .map((part) => (part === '*' ? '.*' : part.startsWith(':') ? '[^/]+' : part.replace(/[.+?^${}()|[\]\\]/g, '\\$&')))
    .join('');
  return new RegExp(`^${escaped}$`);
}
