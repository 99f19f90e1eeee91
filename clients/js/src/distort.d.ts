// Type declarations for distort.js (@consultations/distort).
// Every export of distort.js is declared here (checked by test/package.test.mjs).

/** Discrete question types. */
export type DiscreteType = "binary" | "nominal" | "ordinal";
export type QuestionType = DiscreteType | "continuous";

export type DiscreteMechanismName =
  | "none"
  | "randomised_response"
  | "negative_uniform"
  | "negative_gaussian"
  | "negative_manual";
export type ContinuousMechanismName =
  | "none"
  | "additive_uniform"
  | "additive_gaussian"
  | "additive_laplace"
  | "additive_staircase"
  | "retention_replacement";

export interface Mechanism {
  name: DiscreteMechanismName | ContinuousMechanismName;
  retain?: number;
  matrix?: number[][];
  sigma?: number;
  half_width?: number;
  scale?: number;
  /** additive_staircase: the privacy level eps > 0 (Geng & Viswanath's staircase). */
  epsilon?: number;
  /** additive_staircase: the sensitivity Delta > 0 (the width of one stair). */
  sensitivity?: number;
}

/** One language's version of a question: text, and one label per category in `categories` order. */
export interface QuestionTranslation {
  text?: string;
  labels?: string[];
}

/** A question as published in `GET /api/v1/surveys/{id}/scheme/`. */
export interface SchemeQuestion {
  key: string;
  type: QuestionType;
  text?: string;
  /** Wire values of a discrete question, the values sent. */
  categories?: string[];
  /** [low, high] of a continuous question. */
  range?: [number, number];
  /** Lattice of true values of a continuous question (1 for whole years). */
  step?: number | null;
  mechanism: Mechanism;
  /** Row i = Pr(reported j | true i), rows in `categories` order. */
  channel?: number[][];
  epsilon?: number | null;
  instruction?: string;
  /** Per language code ("de", "pl"): the text and category labels to show. */
  translations?: Record<string, QuestionTranslation>;
  /** The reporting grid's step (continuous questions with noise). */
  resolution?: number;
  /** The reporting grid: reports are origin + k * resolution; null before the grid existed. */
  grid?: Grid | null;
  /** Surveys created before the reporting grid: their reports follow the old law. */
  noise_note?: string;
  /** This question asks again that earlier one: the report memoised for it is sent again. */
  reuse?: { survey: number; question: string };
}

/** A published discrete law; fractions are exact strings "n/d". */
export type GridLaw =
  | { name: "discrete_laplace"; scale: string }
  | { name: "discrete_gaussian"; sigma2: string }
  | { name: "discrete_uniform"; half_width: number }
  | { name: "discrete_staircase"; epsilon: string; steps: number; inner: number }
  | { name: "retention_replacement"; retain: string; points: number };

export interface Grid {
  origin: number;
  resolution: number;
  law: GridLaw;
  /** discrete_laplace: epsilon per grid step of sensitivity (resolution / scale). */
  epsilon_per_step?: number;
}

/** An exact fraction with BigInt numerator and (positive) denominator, in lowest terms. */
export interface Fraction {
  n: bigint;
  d: bigint;
}

export interface Scheme {
  survey: number;
  status: string;
  /** What one response costs the resident's privacy budget (epsilon); null when unbounded. */
  epsilon_total?: number | null;
  /** The consultation's privacy budget per resident (epsilon); null: no cap. */
  privacy_budget?: number | null;
  questions: SchemeQuestion[];
}

/** A true answer: a category wire value, or a number for continuous questions. */
export type Answer = string | number;
export type Answers = Record<string, Answer>;

/** Anything with localStorage's getItem/setItem. */
export interface MemoStorage {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
}

export interface DistortOptions {
  /** The portal's pseudonymous reference; turns on permanent randomisation (memo). */
  participant?: string;
  /** Overrides localStorage; null for no memo. */
  storage?: MemoStorage | null;
}

/** The server's refusal: `detail`, `errors` naming the fields, and `Retry-After` on 429. */
export interface ApiError extends Error {
  status: number;
  errors: Record<string, unknown>;
  retryAfter: string | null;
  /** A stable reason where the server gives one: "privacy_budget", "reused_report_differs". */
  code: string | null;
}

export interface LocalisedOption {
  /** The wire value to pass to distortAnswers(). */
  value: string;
  /** What the resident reads. */
  label: string;
}

export interface LocalisedQuestion {
  /** The translation used, or null for the question's own text and categories. */
  language: string | null;
  text: string;
  options: LocalisedOption[];
}

/** Semantic version of the library, equal to package.json's. */
export declare const VERSION: string;

/** A uniform double in [0, 1) from crypto.getRandomValues (53 random bits). */
export declare function uniform(): number;

/** A uniform BigInt in [0, n) from crypto.getRandomValues (rejection sampling). */
export declare function randomBelow(n: bigint): bigint;

/** Parse an exact fraction "n/d" (or "n") as published in a grid law. */
export declare function parseFraction(text: string, name: string): Fraction;

/** True with probability exp(-gamma) for a rational gamma >= 0 (Canonne, Kamath & Steinke 2020, Algorithm 1). */
export declare function bernoulliExp(gamma: Fraction): boolean;

/** P(K = k) proportional to exp(-|k| / scale) (CKS 2020, Algorithm 2). */
export declare function discreteLaplace(scale: Fraction): bigint;

/** P(K = k) proportional to exp(-k^2 / (2 sigma2)) (CKS 2020, Algorithm 3). */
export declare function discreteGaussian(sigma2: Fraction): bigint;

/** The discrete staircase: d grid steps of sensitivity, the first r of each at the higher level, b = exp(-epsilon). */
export declare function discreteStaircase(epsilon: Fraction, d: bigint, r: bigint): bigint;

/** The value to send for one question given the true answer; throws naming the question. */
export declare function distortAnswer(question: SchemeQuestion, value: Answer): Answer;

/** Distort a resident's answers; memoises per participant and question when `participant` is given. */
export declare function distortAnswers(scheme: Scheme, answers: Answers, options?: DistortOptions): Answers;

/** `GET {baseUrl}/api/v1/surveys/{surveyId}/scheme/`; rejects with an ApiError. */
export declare function fetchScheme(baseUrl: string, surveyId: number | string, key: string): Promise<Scheme>;

/** Send already-distorted answers (never true ones). Resolves to the server's JSON body. */
export declare function submitResponse(
  baseUrl: string,
  surveyId: number | string,
  key: string,
  participant: string,
  distortedAnswers: Answers,
  options?: TokenOptions,
): Promise<Record<string, unknown>>;

export interface TokenOptions {
  /** Where the withdrawal token is kept (localStorage by default; null for nowhere). */
  storage?: Pick<Storage, "getItem" | "setItem" | "removeItem"> | null;
}

/** The withdrawal token submitResponse() kept for this participant, or null. */
export declare function withdrawalToken(
  surveyId: number | string,
  participant: string,
  options?: TokenOptions,
): string | null;

/** Withdraw with the kept token (or options.withdrawalToken): POST, no reference in the URL. */
export declare function withdrawResponse(
  baseUrl: string,
  surveyId: number | string,
  key: string,
  participant: string,
  options?: TokenOptions & { withdrawalToken?: string },
): Promise<void>;

/** A participant's privacy budget in the survey's consultation (epsilon). */
export interface Budget {
  budget: number | null;
  spent: number | null;
  remaining: number | null;
}

/** POST .../responses/budget/ with a kept withdrawal token of the consultation (or
 * options.withdrawalToken); null when none is kept for this participant. */
export declare function fetchBudget(
  baseUrl: string,
  surveyId: number | string,
  key: string,
  participant: string,
  options?: TokenOptions & { withdrawalToken?: string },
): Promise<Budget | null>;

/** Whether sending the scheme's answers fits the budget (after = spent + epsilon_total). */
export interface BudgetOutlook {
  budget: number | null;
  spent: number | null;
  cost: number | null;
  after: number | null;
  fits: boolean;
}
export declare function budgetOutlook(scheme: Scheme, budget: Budget | null): BudgetOutlook;

/** The first preferred language the question has a translation for, or null. */
export declare function pickLanguage(question: SchemeQuestion, preferred: string | readonly string[]): string | null;

/** Text and option labels to show in the resident's language; option values stay wire values. */
export declare function localiseQuestion(
  question: SchemeQuestion,
  preferred: string | readonly string[],
): LocalisedQuestion;
