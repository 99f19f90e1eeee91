// A seeded stand-in for crypto.getRandomValues, shared by the Node harness
// (tests/js/) and the browser harness (tests/browser/, served next to the page).
//
// distort.js looks up globalThis.crypto.getRandomValues on every call, so the
// statistical tests can substitute this generator and become reproducible: a
// seed either passes its chi-square / KS checks or fails them on every run.
// One unseeded smoke test per harness keeps proving that the real
// crypto.getRandomValues is what the library uses.
//
// The generator is xoshiro128** (Blackman & Vigna 2018), seeded through
// splitmix32; it fills Uint32Array / Uint8Array views like the real API.

function splitmix32(seed) {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x9e3779b9) >>> 0;
    let z = state;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export function xoshiro128ss(seed) {
  const init = splitmix32(seed);
  const s = new Uint32Array([init(), init(), init(), init()]);
  const rotl = (x, k) => ((x << k) | (x >>> (32 - k))) >>> 0;
  return () => {
    const result = Math.imul(rotl(Math.imul(s[1], 5) >>> 0, 7), 9) >>> 0;
    const t = (s[1] << 9) >>> 0;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 11);
    return result;
  };
}

// A function with the signature of crypto.getRandomValues drawing from `seed`.
export function seededGetRandomValues(seed) {
  const next = xoshiro128ss(seed);
  return (array) => {
    const words = new Uint32Array(array.buffer, array.byteOffset, Math.floor(array.byteLength / 4));
    for (let i = 0; i < words.length; i++) words[i] = next();
    const bytes = new Uint8Array(array.buffer, array.byteOffset + words.byteLength, array.byteLength % 4);
    for (let i = 0; i < bytes.length; i++) bytes[i] = next() & 0xff;
    return array;
  };
}

const realGetRandomValues = globalThis.crypto.getRandomValues;

// Replace globalThis.crypto.getRandomValues with a generator seeded by `seed`.
export function useSeed(seed) {
  Object.defineProperty(globalThis.crypto, "getRandomValues", {
    value: seededGetRandomValues(seed),
    configurable: true,
    writable: true,
  });
}

// Put the platform's cryptographic generator back.
export function useRealCrypto() {
  delete globalThis.crypto.getRandomValues; // removes the own property; the prototype's method shows again
  if (globalThis.crypto.getRandomValues !== realGetRandomValues) {
    throw new Error("could not restore the real crypto.getRandomValues");
  }
}

// Run fn under a seeded generator and restore the real one afterwards.
export function withSeed(seed, fn) {
  useSeed(seed);
  try {
    return fn();
  } finally {
    useRealCrypto();
  }
}
