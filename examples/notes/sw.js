// The page's service worker, which lets it open offline: the client keeps
// the notes and the queue in IndexedDB, but the page itself (its HTML,
// script and config) must come from somewhere when the network does not
// answer. Network first, so an online page is always the latest; the last
// copy from the cache when offline. The API's requests (another origin)
// pass by: the client queues and retries them itself.
const CACHE = "notes-page";

// On install, the page that registered it is cached at once, as its first
// load went by before this worker ran.
self.addEventListener("install", (event) => {
  event.waitUntil(
    (async () => {
      const pages = await self.clients.matchAll({ type: "window", includeUncontrolled: true });
      const queries = [...new Set(["", ...pages.map((p) => new URL(p.url).search)])];
      const cache = await caches.open(CACHE);
      await cache.addAll(["/app.js", ...queries.flatMap((q) => [`/${q}`, `/config.json${q}`])]);
      await self.skipWaiting();
    })(),
  );
});

self.addEventListener("activate", (event) => event.waitUntil(self.clients.claim()));

self.addEventListener("fetch", (event) => {
  const { request } = event;
  if (request.method !== "GET" || new URL(request.url).origin !== self.location.origin) {
    return;
  }
  event.respondWith(
    fetch(request).then(
      async (response) => {
        if (response.ok) {
          await (await caches.open(CACHE)).put(request, response.clone());
        }
        return response;
      },
      async () => (await caches.match(request)) ?? Response.error(),
    ),
  );
});
