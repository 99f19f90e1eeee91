// Client-side distortion for privacy-preserving consultations.
//
// The true answer never leaves the resident's device: a portal fetches the
// survey's published scheme (GET /api/v1/surveys/{id}/scheme/), calls
// distortAnswers() and sends only what it returns.  The scheme carries the
// full channel of every discrete question it expects the client to distort,
// so this file needs no mechanism maths: it samples row i of the channel.
//
// Randomness comes only from crypto.getRandomValues.  Math.random is not a
// cryptographic generator: its state can be recovered from a few outputs,
// which would let an observer undo the noise.
//
// ES module, no dependencies; runs in browsers and in Node >= 19.
// Published on npm as @consultations/distort (clients/js/package.json); the
// server serves this same file at /static/privacy/distort.js.

// Semantic version of this file; equal to package.json's "version" (tested).
export const VERSION = "1.4.0";

const MEMO_PREFIX = "privacy-distort:v1";
const SAMPLED_DISCRETE = new Set(["randomised_response", "negative_uniform", "negative_gaussian"]);
const AS_IS_DISCRETE = new Set(["none", "negative_manual"]);
const CONTINUOUS = new Set(["none", "additive_uniform", "additive_gaussian", "additive_laplace", "additive_staircase", "retention_replacement"]);
const ROW_SUM_TOLERANCE = 1e-6;

const words = new Uint32Array(2);

// A uniform double in [0, 1) with all 53 bits of mantissa random: 27 bits from
// one 32-bit word and 26 from another.  (One word alone gives only 2^32
// distinct values; `word % k` would favour small categories.)
export function uniform() {
  globalThis.crypto.getRandomValues(words);
  return ((words[0] >>> 5) * 67108864 + (words[1] >>> 6)) / 9007199254740992;
}

// A uniform double in (0, 1), for the logarithms below.
function openUniform() {
  let u = 0;
  while (u === 0) u = uniform();
  return u;
}

function gaussian(sigma) {
  // Box–Muller; the second variate is thrown away to keep the module stateless.
  return sigma * Math.sqrt(-2 * Math.log(openUniform())) * Math.cos(2 * Math.PI * uniform());
}

function laplace(scale) {
  // Inverse CDF of the Laplace distribution centred on 0.
  const u = openUniform();
  return u < 0.5 ? scale * Math.log(2 * u) : -scale * Math.log(2 * (1 - u));
}

// The staircase mechanism of Geng & Viswanath, "The optimal noise-adding
// mechanism in differential privacy", IEEE Trans. Inf. Theory 62(2), 2016:
// with gamma = 1 / (1 + e^(eps/2)) and b = e^(-eps), the noise density is
// a*b^k on |z| in [k, k + gamma)*delta and a*b^(k+1) on [k + gamma, k + 1)*delta.
// Drawn as S*delta*(G + gamma*U) if B = 0, else S*delta*(G + gamma + (1 - gamma)*U),
// with S = +-1, G geometric (P(G = k) = (1 - b) b^k), B Bernoulli with
// P(B = 0) = gamma / (gamma + (1 - gamma) b) and U uniform on [0, 1).
function staircase(epsilon, delta) {
  const gamma = 1 / (1 + Math.exp(epsilon / 2));
  // gamma / (gamma + (1 - gamma) e^-eps) simplified (multiply through by 1/gamma =
  // 1 + e^(eps/2)): no 0/0 when e^(eps/2) overflows.
  const pInner = 1 / (1 + Math.exp(-epsilon / 2));
  const sign = uniform() < 0.5 ? -1 : 1;
  // floor(ln(U') / ln(b)) with U' uniform on (0, 1] and ln(b) = -eps exactly.
  const g = Math.floor(Math.log(1 - uniform()) / -epsilon);
  const inner = uniform() < pInner;
  const u = uniform();
  return sign * delta * (inner ? g + gamma * u : g + gamma + (1 - gamma) * u);
}

// --- Exact discrete noise on the published reporting grid ----------------------
// Floating-point noise leaks the true value through the report's last bits
// (Mironov, "On significance of the least significant bits for differential
// privacy", CCS 2012).  A continuous question with noise publishes `grid`:
// {origin, resolution, law} with the law's parameters as exact fractions
// ("n/d").  The report is origin + (j + K) * resolution computed in double
// arithmetic, where j is the true value's randomised rounding to the grid (up
// with probability equal to the exact fractional position: unbiased) and K an
// integer drawn with BigInt arithmetic only: discrete Laplace and discrete
// Gaussian with the exact samplers of Canonne, Kamath & Steinke, "The discrete
// Gaussian for differential privacy" (NeurIPS 2020, Algorithms 1-3), the
// discrete staircase and the discrete uniform.  Every random choice is an
// integer below n drawn from crypto.getRandomValues by rejection.

// A uniform BigInt in [0, n), n >= 1.
export function randomBelow(n) {
  if (n <= 1n) return 0n;
  const bits = (n - 1n).toString(2).length;
  const count = Math.ceil(bits / 32);
  const buffer = new Uint32Array(count);
  const excess = BigInt(count * 32 - bits);
  for (;;) {
    globalThis.crypto.getRandomValues(buffer);
    let x = 0n;
    for (const word of buffer) x = (x << 32n) | BigInt(word);
    x >>= excess;
    if (x < n) return x;
  }
}

function gcd(a, b) {
  a = a < 0n ? -a : a;
  b = b < 0n ? -b : b;
  while (b) [a, b] = [b, a % b];
  return a;
}

// Exact fractions {n, d} with BigInt parts, d > 0, in lowest terms.
function frac(n, d = 1n) {
  if (d < 0n) [n, d] = [-n, -d];
  const g = gcd(n, d) || 1n;
  return { n: n / g, d: d / g };
}
const sub = (a, b) => frac(a.n * b.d - b.n * a.d, a.d * b.d);
const mul = (a, b) => frac(a.n * b.n, a.d * b.d);
const div = (a, b) => frac(a.n * b.d, a.d * b.n);
const floorOf = (a) => (a.n >= 0n ? a.n / a.d : -((-a.n + a.d - 1n) / a.d));

export function parseFraction(text, name) {
  const match = typeof text === "string" ? /^(-?\d+)(?:\/(\d+))?$/.exec(text) : null;
  if (!match || match[2] === "0") throw new Error(`grid law parameter "${name}" must be an exact fraction "n/d", got ${JSON.stringify(text)}`);
  return frac(BigInt(match[1]), BigInt(match[2] ?? "1"));
}

// The exact value of a finite double as a fraction.
function fromDouble(x) {
  const view = new DataView(new ArrayBuffer(8));
  view.setFloat64(0, x);
  const hi = view.getUint32(0);
  const sign = hi >>> 31 ? -1n : 1n;
  const exponent = (hi >>> 20) & 0x7ff;
  let mantissa = (BigInt(hi & 0xfffff) << 32n) | BigInt(view.getUint32(4));
  let power = exponent - 1075;
  if (exponent === 0) power = -1074;
  else mantissa |= 1n << 52n;
  return power >= 0 ? frac(sign * (mantissa << BigInt(power))) : frac(sign * mantissa, 1n << BigInt(-power));
}

const bernoulli = (p) => randomBelow(p.d) < p.n; // p in [0, 1]

// True with probability exp(-gamma), gamma >= 0 rational (CKS Algorithm 1).
export function bernoulliExp(gamma) {
  while (gamma.n > gamma.d) {
    if (!bernoulliExp(frac(1n))) return false;
    gamma = frac(gamma.n - gamma.d, gamma.d);
  }
  let k = 1n;
  while (bernoulli(frac(gamma.n, gamma.d * k))) k += 1n;
  return k % 2n === 1n;
}

// X with P(X = x) proportional to exp(-x / t) on 0, 1, 2, ... (CKS Algorithm 2's core).
function geometricSteps(t) {
  for (;;) {
    const u = randomBelow(t);
    if (!bernoulliExp(frac(u, t))) continue;
    let v = 0n;
    while (bernoulliExp(frac(1n))) v += 1n;
    return u + t * v;
  }
}

// P(K = k) proportional to exp(-|k| / scale), scale = t / s (CKS Algorithm 2).
export function discreteLaplace(scale) {
  for (;;) {
    const y = geometricSteps(scale.n) / scale.d;
    const negative = randomBelow(2n) === 1n;
    if (negative && y === 0n) continue;
    return negative ? -y : y;
  }
}

// P(K = k) proportional to exp(-k^2 / (2 sigma^2)) (CKS Algorithm 3).
export function discreteGaussian(sigma2) {
  let root = 0n; // floor(sqrt(floor(sigma2)))
  const whole = sigma2.n / sigma2.d;
  if (whole > 0n) {
    root = BigInt(Math.floor(Math.sqrt(Number(whole))));
    while (root * root > whole) root -= 1n;
    while ((root + 1n) * (root + 1n) <= whole) root += 1n;
  }
  const t = root + 1n;
  for (;;) {
    const y = discreteLaplace(frac(t));
    const distance = sub(frac(y < 0n ? -y : y), frac(sigma2.n, sigma2.d * t));
    if (bernoulliExp(div(mul(distance, distance), frac(2n * sigma2.n, sigma2.d)))) return y;
  }
}

// The staircase on the integers: P(K = k) proportional to b^j for |k| = j d + s
// with s < r and b^(j+1) for r <= s < d, b = exp(-epsilon).
export function discreteStaircase(epsilon, d, r) {
  for (;;) {
    const negative = randomBelow(2n) === 1n;
    const steps = geometricSteps(epsilon.d) / epsilon.n; // P(steps = g) ~ exp(-g epsilon)
    let position;
    for (;;) {
      position = randomBelow(d);
      if (position < r || bernoulliExp(epsilon)) break;
    }
    const magnitude = steps * d + position;
    if (negative && magnitude === 0n) continue;
    return negative ? -magnitude : magnitude;
  }
}

function wholeParam(question, law, name) {
  const v = law[name];
  if (!Number.isSafeInteger(v) || v < 0) fail(question, `grid law parameter "${name}" must be a whole number, got ${JSON.stringify(v)}`);
  return BigInt(v);
}

function fractionParam(question, law, name) {
  try {
    const f = parseFraction(law[name], name);
    if (f.n <= 0n) throw new Error(`grid law parameter "${name}" must be > 0, got ${JSON.stringify(law[name])}`);
    return f;
  } catch (error) {
    fail(question, error.message);
  }
}

// The report of a true value on the question's published grid.
function gridReport(question, value) {
  const grid = question.grid;
  const { origin, resolution, law } = grid || {};
  if (!Number.isFinite(origin) || !Number.isFinite(resolution) || !(resolution > 0)) fail(question, `invalid grid ${JSON.stringify(grid)}`);
  if (!law || typeof law.name !== "string") fail(question, "the grid has no law");
  const u = div(sub(fromDouble(value), fromDouble(origin)), fromDouble(resolution));
  const below = floorOf(u);
  const j = below + (bernoulli(sub(u, frac(below))) ? 1n : 0n);
  let k;
  switch (law.name) {
    case "discrete_laplace": k = j + discreteLaplace(fractionParam(question, law, "scale")); break;
    case "discrete_gaussian": k = j + discreteGaussian(fractionParam(question, law, "sigma2")); break;
    case "discrete_uniform": { const h = wholeParam(question, law, "half_width"); k = j + randomBelow(2n * h + 1n) - h; break; }
    case "discrete_staircase": {
      const d = wholeParam(question, law, "steps");
      const r = wholeParam(question, law, "inner");
      if (!(r >= 1n && r <= d)) fail(question, `grid law needs 1 <= inner <= steps, got ${JSON.stringify(law)}`);
      k = j + discreteStaircase(fractionParam(question, law, "epsilon"), d, r);
      break;
    }
    case "retention_replacement": {
      const retain = fractionParam(question, law, "retain");
      if (retain.n > retain.d) fail(question, `"retain" must be in (0, 1], got ${JSON.stringify(law.retain)}`);
      const points = wholeParam(question, law, "points");
      k = bernoulli(retain) ? j : randomBelow(points);
      break;
    }
    default: fail(question, `unknown grid law "${law.name}"`);
  }
  return origin + Number(k) * resolution;
}

// Whether a value is a grid value of the question (for memos).
function onGrid(question, value) {
  const grid = question.grid;
  if (!grid) return true;
  const k = Math.round((value - grid.origin) / grid.resolution);
  return grid.origin + k * grid.resolution === value;
}

function fail(question, message) {
  throw new Error(`question "${question && question.key}": ${message}`);
}

function positiveParam(question, name) {
  const v = question.mechanism[name];
  if (typeof v !== "number" || !Number.isFinite(v) || v <= 0) fail(question, `mechanism parameter "${name}" must be a positive number, got ${JSON.stringify(v)}`);
  return v;
}

function checkChannel(question) {
  const { channel, categories } = question;
  const k = categories.length;
  if (!Array.isArray(channel) || channel.length !== k) fail(question, `the scheme must carry a ${k}x${k} "channel" for mechanism "${question.mechanism.name}"`);
  for (const row of channel) {
    if (!Array.isArray(row) || row.length !== k || row.some((p) => typeof p !== "number" || !(p >= 0) || !Number.isFinite(p))) fail(question, "every channel row must hold one non-negative probability per category");
    const sum = row.reduce((a, b) => a + b, 0);
    if (Math.abs(sum - 1) > ROW_SUM_TOLERANCE) fail(question, `a channel row sums to ${+sum.toFixed(9)}, not 1`);
  }
  return channel;
}

// Inverse-CDF draw from one channel row.  Scaling u by the row's sum absorbs
// rounding in the published probabilities; the fallback returns the last
// category with positive probability when u*sum rounds up to the sum itself.
function sampleRow(row) {
  const total = row.reduce((a, b) => a + b, 0);
  const u = uniform() * total;
  let cumulative = 0;
  let last = -1;
  for (let j = 0; j < row.length; j++) {
    if (row[j] <= 0) continue;
    cumulative += row[j];
    last = j;
    if (u < cumulative) return j;
  }
  return last;
}

function distortDiscrete(question, value) {
  const { categories, mechanism } = question;
  if (!Array.isArray(categories) || categories.length < 2) fail(question, "a discrete question needs at least two categories");
  const i = categories.indexOf(value);
  if (i < 0) fail(question, `unknown category ${JSON.stringify(value)}; expected one of ${JSON.stringify(categories)}`);
  if (AS_IS_DISCRETE.has(mechanism.name)) return value; // negative_manual: the resident's own "not me" choice
  if (!SAMPLED_DISCRETE.has(mechanism.name)) fail(question, `unknown mechanism "${mechanism.name}" for a ${question.type} question`);
  return categories[sampleRow(checkChannel(question)[i])];
}

function distortContinuous(question, value) {
  const { mechanism } = question;
  if (!CONTINUOUS.has(mechanism.name)) fail(question, `unknown mechanism "${mechanism.name}" for a continuous question`);
  if (typeof value !== "number" || !Number.isFinite(value)) fail(question, `the answer must be a finite number, got ${JSON.stringify(value)}`);
  const range = question.range;
  const hasRange = Array.isArray(range) && range.length === 2 && range.every(Number.isFinite) && range[0] < range[1];
  if (range !== undefined && !hasRange) fail(question, `invalid range ${JSON.stringify(range)}`);
  // The server accepts only values the mechanism could have produced from the
  // range, so an out-of-range answer is caught here, where it can be fixed.
  if (hasRange && (value < range[0] || value > range[1])) fail(question, `the answer ${value} is outside the range [${range[0]}, ${range[1]}]`);
  if (mechanism.name !== "none" && question.grid !== undefined && question.grid !== null) return gridReport(question, value);
  // Surveys created before the reporting grid (grid null, a noise_note): the old law.
  switch (mechanism.name) {
    case "none": return value;
    case "additive_uniform": { const h = positiveParam(question, "half_width"); return value + h * (2 * uniform() - 1); }
    case "additive_gaussian": return value + gaussian(positiveParam(question, "sigma"));
    case "additive_laplace": return value + laplace(positiveParam(question, "scale"));
    case "additive_staircase": {
      const epsilon = positiveParam(question, "epsilon");
      const sent = value + staircase(epsilon, positiveParam(question, "sensitivity"));
      if (!Number.isFinite(sent)) fail(question, `mechanism parameters "epsilon" ${epsilon} and "sensitivity" give noise too large to send`);
      return sent;
    }
    case "retention_replacement": {
      const p = question.mechanism.retain;
      if (typeof p !== "number" || !(p > 0 && p <= 1)) fail(question, `"retain" must be in (0, 1], got ${JSON.stringify(p)}`);
      if (!hasRange) fail(question, "retention_replacement needs the question's range");
      return uniform() < p ? value : range[0] + (range[1] - range[0]) * uniform();
    }
  }
}

// The value to send for one question of the scheme, given the true answer (a
// category label, or a number for continuous questions).  Throws an Error
// naming the question on invalid input.
export function distortAnswer(question, value) {
  if (!question || typeof question !== "object" || !question.mechanism || typeof question.mechanism.name !== "string") fail(question, "not a question of a published scheme (missing mechanism)");
  return question.type === "continuous" ? distortContinuous(question, value) : distortDiscrete(question, value);
}

// --- Permanent randomisation ------------------------------------------------
// A resident who answers again (after withdrawing, on a retry, in a second
// tab) must send the same distorted value, or the noise could be averaged
// away.  The memo is keyed by (survey, participant, question) and holds only
// the distorted value, never the true one: a shared device must not keep
// residents' true answers.
//
// Our choice when the true answer changes: the earlier draw is kept.  Noticing
// the change would mean storing the true answer, and drawing afresh on every
// change would let anyone toggle an answer back and forth until the "noise"
// shows what they like, a bias the estimators cannot see.  Portals should
// therefore draw only once the resident has finished the form (the example
// page draws when "Review" is pressed, and says the draw is final).
// Answers sent as they are (mechanism "none", the resident's own
// negative_manual choice) involve no draw and are not memoised: the memo
// would hold a true answer and would freeze a resident's correction.

function defaultStorage() {
  try {
    return globalThis.localStorage ?? null; // absent in Node; may throw in private windows
  } catch {
    return null;
  }
}

function isSentAsIs(question) {
  const name = question.mechanism.name;
  return name === "none" || (question.type !== "continuous" && AS_IS_DISCRETE.has(name));
}

function memoKey(surveyId, participant, questionKey) {
  return `${MEMO_PREFIX}:${surveyId}:${participant}:${questionKey}`;
}

// A question that asks again an earlier one ("reuse": {"survey": S, "question": K}, same
// categories and mechanism) is memoised under that earlier question: the report kept
// from survey S is sent again (RAPPOR's permanent randomisation), which the server
// checks and charges nothing for.  Survey ids are unique across consultations, so the
// memo is per consultation and participant.
function memoKeyOf(scheme, participant, question) {
  const reuse = question.reuse;
  if (reuse && reuse.survey !== undefined && typeof reuse.question === "string") {
    return memoKey(reuse.survey, participant, reuse.question);
  }
  return memoKey(scheme.survey, participant, question.key);
}

function recall(storage, key, question) {
  try {
    const raw = storage.getItem(key);
    if (raw === null) return undefined;
    const value = JSON.parse(raw);
    // Ignore a stale or tampered entry that the scheme could not have produced.
    const ok = question.type === "continuous" ? Number.isFinite(value) && onGrid(question, value) : question.categories.includes(value);
    return ok ? value : undefined;
  } catch {
    return undefined;
  }
}

function remember(storage, key, value) {
  try {
    storage.setItem(key, JSON.stringify(value));
  } catch {
    // Quota exceeded or storage disabled: the answer is still distorted correctly.
  }
}

// Distort a resident's answers {questionKey: trueValue} against a scheme.
// options.participant turns on memoisation; options.storage overrides
// localStorage (anything with getItem/setItem, or null for none).
// Every answer is validated before anything is memoised.
export function distortAnswers(scheme, answers, options = {}) {
  if (!scheme || !Array.isArray(scheme.questions)) throw new Error("not a published scheme: missing questions");
  const byKey = new Map(scheme.questions.map((q) => [q.key, q]));
  const storage = options.participant ? (options.storage === undefined ? defaultStorage() : options.storage) : null;
  const sent = {};
  const fresh = [];
  for (const [questionKey, value] of Object.entries(answers)) {
    const question = byKey.get(questionKey);
    if (!question) throw new Error(`unknown question "${questionKey}" for survey ${scheme.survey}`);
    const distorted = distortAnswer(question, value); // validates even when a memo exists
    if (!storage || isSentAsIs(question)) {
      sent[questionKey] = distorted;
      continue;
    }
    const key = memoKeyOf(scheme, options.participant, question);
    const memo = recall(storage, key, question);
    if (memo !== undefined) {
      sent[questionKey] = memo;
    } else {
      sent[questionKey] = distorted;
      fresh.push([key, distorted]);
    }
  }
  for (const [key, value] of fresh) remember(storage, key, value);
  return sent;
}

// --- HTTP helpers --------------------------------------------------------------
// baseUrl is the server's origin ("" for the page's own); "/api/v1" is appended.

async function call(method, url, key, body) {
  const headers = { Accept: "application/json", Authorization: `Bearer ${key}` };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const payload = await response.json().catch(() => null);
  if (!response.ok) {
    const error = new Error((payload && payload.detail) || `HTTP ${response.status}`);
    Object.assign(error, { status: response.status, errors: (payload && payload.errors) || {}, retryAfter: response.headers.get("Retry-After"), code: (payload && payload.code) || null });
    throw error;
  }
  return payload;
}

function surveyUrl(baseUrl, surveyId) {
  return `${String(baseUrl).replace(/\/+$/, "")}/api/v1/surveys/${encodeURIComponent(surveyId)}`;
}

export function fetchScheme(baseUrl, surveyId, key) {
  return call("GET", `${surveyUrl(baseUrl, surveyId)}/scheme/`, key);
}

// Send already-distorted answers.  Never pass true answers here.
// The 201 carries the participant's withdrawal token, shown once: it is kept
// beside the memoised answers (options.storage, localStorage by default) so
// that withdrawResponse() can prove later that this is the participant.
export async function submitResponse(baseUrl, surveyId, key, participant, distortedAnswers, options = {}) {
  const body = await call("POST", `${surveyUrl(baseUrl, surveyId)}/responses/`, key, { participant, answers: distortedAnswers });
  const storage = options.storage === undefined ? defaultStorage() : options.storage;
  if (storage && body && body.withdrawal_token) remember(storage, tokenKey(surveyId, participant), body.withdrawal_token);
  return body;
}

function tokenKey(surveyId, participant) {
  return `${MEMO_PREFIX}-withdrawal:${surveyId}:${participant}`;
}

// The withdrawal token kept for this participant, or null.
export function withdrawalToken(surveyId, participant, options = {}) {
  const storage = options.storage === undefined ? defaultStorage() : options.storage;
  if (!storage) return null;
  try {
    const raw = storage.getItem(tokenKey(surveyId, participant));
    return raw === null ? null : JSON.parse(raw);
  } catch {
    return null;
  }
}

// Withdraw the participant's response.  The reference and the token travel in
// the body of a POST, never in a URL (URLs end up in logs).  The memoised
// answers stay: answering again is refused anyway.
export async function withdrawResponse(baseUrl, surveyId, key, participant, options = {}) {
  const token = options.withdrawalToken ?? withdrawalToken(surveyId, participant, options);
  if (!token) throw new Error(`no withdrawal token kept for participant "${participant}" of survey ${surveyId}`);
  await call("POST", `${surveyUrl(baseUrl, surveyId)}/responses/withdraw/`, key, { participant, withdrawal_token: token });
  const storage = options.storage === undefined ? defaultStorage() : options.storage;
  try {
    if (storage) storage.removeItem(tokenKey(surveyId, participant));
  } catch {
    // storage disabled: nothing kept
  }
}

// --- The resident's privacy budget -------------------------------------------
// A consultation may cap what all its surveys together learn about one resident
// (scheme.privacy_budget, ε; null = no cap); each response costs the scheme's
// epsilon_total.  The server tells a participant what they spent when they prove who
// they are with a withdrawal token of the consultation: the one kept for this survey
// first, then any other kept for this participant (another survey's; a token of
// another consultation is refused with 404 and the next one is tried).

function keptTokens(surveyId, participant, storage) {
  const tokens = [];
  const own = withdrawalToken(surveyId, participant, { storage });
  if (own) tokens.push(own);
  if (!storage || typeof storage.length !== "number" || typeof storage.key !== "function") return tokens;
  const prefix = `${MEMO_PREFIX}-withdrawal:`;
  const suffix = `:${participant}`;
  try {
    for (let i = 0; i < storage.length; i++) {
      const name = storage.key(i);
      if (!name || !name.startsWith(prefix) || !name.endsWith(suffix)) continue;
      const token = JSON.parse(storage.getItem(name));
      if (typeof token === "string" && !tokens.includes(token)) tokens.push(token);
    }
  } catch {
    // storage disabled: what was found so far
  }
  return tokens;
}

// {budget, spent, remaining} of the participant in the survey's consultation, or null
// when no withdrawal token is kept for them (a first visit on this device: nothing
// proves who they are).  options.withdrawalToken overrides the kept ones.
export async function fetchBudget(baseUrl, surveyId, key, participant, options = {}) {
  const storage = options.storage === undefined ? defaultStorage() : options.storage;
  const tokens = options.withdrawalToken ? [options.withdrawalToken] : keptTokens(surveyId, participant, storage);
  for (const token of tokens) {
    try {
      return await call("POST", `${surveyUrl(baseUrl, surveyId)}/responses/budget/`, key, { participant, withdrawal_token: token });
    } catch (error) {
      if (error.status !== 404) throw error;
    }
  }
  return null;
}

// Whether sending this scheme's answers fits the budget: {budget, spent, cost, after,
// fits}.  `budget` is fetchBudget()'s answer or null (nothing spent that this device
// knows of); a scheme without a budget always fits.
export function budgetOutlook(scheme, budget) {
  const cap = scheme.privacy_budget ?? null;
  const cost = scheme.epsilon_total ?? null;
  const spent = budget && typeof budget.spent === "number" ? budget.spent : 0;
  if (cap === null) return { budget: null, spent: null, cost, after: null, fits: true };
  const after = cost === null ? Infinity : spent + cost;
  return { budget: cap, spent, cost, after, fits: after <= cap * (1 + 1e-9) };
}

// --- The resident's language ---------------------------------------------------
// A scheme may carry, per question, "translations": {"de": {"text": "...",
// "labels": ["...", ...]}} with one label per category, in "categories" order.
// Portals show these labels; the answers they pass to distortAnswers() and send
// stay the stable wire values in "categories".

function primary(tag) {
  return String(tag || "").toLowerCase().split(/[-_]/)[0];
}

// The first of `preferred` (e.g. navigator.languages) that the question has a
// translation for, matched exactly or on the primary subtag ("de-AT" -> "de");
// null when none matches (show the question's own text and categories).
export function pickLanguage(question, preferred) {
  const available = Object.keys((question && question.translations) || {});
  for (const tag of [].concat(preferred || [])) {
    const exact = available.find((code) => code.toLowerCase() === String(tag).toLowerCase());
    if (exact) return exact;
    const loose = available.find((code) => primary(code) === primary(tag));
    if (loose) return loose;
  }
  return null;
}

// What to show for one question: {language, text, options: [{value, label}]}.
// `value` is the wire value to pass to distortAnswers(); `label` is what the
// resident reads.  Continuous questions have no options.
export function localiseQuestion(question, preferred) {
  const language = pickLanguage(question, preferred);
  const translation = language ? question.translations[language] : {};
  const categories = Array.isArray(question.categories) ? question.categories : [];
  const labels = Array.isArray(translation.labels) && translation.labels.length === categories.length ? translation.labels : categories;
  return {
    language,
    text: translation.text || question.text || question.key,
    options: categories.map((value, i) => ({ value, label: labels[i] })),
  };
}
