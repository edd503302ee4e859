// The browser's part in an authorization-code flow, for tests: no person
// clicks through, since the authorization servers the tests start approve
// at once; this only carries the redirects and cookies a browser would.

/**
 * Plays the browser for an authorization request: follows the redirects
 * from `authorizationUrl` through the provider (carrying its cookies) until
 * one leads to `redirectUri`, and returns that redirect's query parameters
 * (`code`, `state`, `iss`, or `error`). Only the provider's origin is
 * visited; at most 10 hops.
 */
export async function followAuthorization(authorizationUrl, redirectUri) {
  const cookies = new Map();
  let url = new URL(authorizationUrl);
  const origin = url.origin;
  for (let hop = 0; hop < 10; hop++) {
    if (url.href.startsWith(redirectUri)) return Object.fromEntries(url.searchParams);
    if (url.origin !== origin) throw new Error(`authorization left the provider for ${url}`);
    const cookie = [...cookies].map(([name, value]) => `${name}=${value}`).join('; ');
    const res = await fetch(url, { redirect: 'manual', headers: cookie ? { cookie } : {} });
    for (const line of res.headers.getSetCookie()) {
      const [pair] = line.split(';');
      const at = pair.indexOf('=');
      const expired = /max-age=0|expires=thu, 01 jan 1970/i.test(line);
      if (expired) cookies.delete(pair.slice(0, at));
      else cookies.set(pair.slice(0, at), pair.slice(at + 1));
    }
    const body = await res.text();
    const location = res.headers.get('location');
    if (res.status < 300 || res.status >= 400 || !location) {
      throw new Error(`authorization stopped at ${url} with ${res.status}: ${body.slice(0, 500)}`);
    }
    url = new URL(location, url);
  }
  throw new Error('authorization took more than 10 redirects');
}
