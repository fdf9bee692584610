// The `tritonlens.*` settings as the server receives them: initializationOptions and
// workspace/didChangeConfiguration carry exactly these keys, with bad values replaced by defaults.

export type Severity = 'error' | 'warning' | 'info' | 'hint' | 'off';

export interface ServerSettings {
  target: string;
  extraTargets: string[];
  compileOn: 'save' | 'change';
  compileTimeout: number;
  maxWorkers: number;
  moduleExecution: 'definitions' | 'full';
  stormThreshold: number;
  rules: Record<string, Severity>;
  interpreter: string[];
  allCaptures: boolean;
  maxCapturedSpecs: number;
  compileMemoryMB: number;
  maskedLaneThreshold: number;
  gridFillThreshold: number;
  smCount: number;
  gpu: string;
  env: Record<string, string>;
  severityFromCost: boolean;
  autoCapture: boolean;
  autoCaptureTimeout: number;
}

export const DEFAULT_SETTINGS: Readonly<ServerSettings> = Object.freeze({
  target: 'auto',
  extraTargets: [],
  compileOn: 'save',
  compileTimeout: 60,
  maxWorkers: 0, // 0: from the cores available (the server leaves one for the editor)
  moduleExecution: 'definitions',
  stormThreshold: 3,
  rules: {},
  interpreter: [],
  allCaptures: false,
  maxCapturedSpecs: 12,
  compileMemoryMB: 8192,
  maskedLaneThreshold: 0.25,
  gridFillThreshold: 0.75,
  smCount: 0,
  gpu: '', // '': the local GPU, else the target's default (see docs/gpu.md)
  env: {},
  severityFromCost: true,
  autoCapture: true, // run a kernel file's own tests / __main__ without a GPU for its specs (sandboxed)
  autoCaptureTimeout: 20,
});

export const SETTING_KEYS = Object.keys(DEFAULT_SETTINGS) as (keyof ServerSettings)[];

/** Targets offered by "Select Target"; any `cuda:<sm>` / `hip:<arch>` is accepted from settings. */
export const KNOWN_TARGETS: readonly { target: string; description: string }[] = [
  { target: 'auto', description: 'the local GPU if there is one, else cuda:90' },
  { target: 'cuda:80', description: 'A100 (Ampere)' },
  { target: 'cuda:86', description: 'RTX 30xx, A10 (Ampere)' },
  { target: 'cuda:89', description: 'RTX 40xx, L4, L40 (Ada)' },
  { target: 'cuda:90', description: 'H100, H200 (Hopper)' },
  { target: 'cuda:100', description: 'B200 (Blackwell)' },
  { target: 'cuda:120', description: 'RTX 50xx (Blackwell)' },
  { target: 'hip:gfx90a', description: 'MI200 (CDNA2)' },
  { target: 'hip:gfx942', description: 'MI300 (CDNA3)' },
  { target: 'hip:gfx950', description: 'MI350 (CDNA4)' },
];

const TARGET_RE = /^(auto|cuda:\d+|hip:gfx[0-9a-f]+)$/;
const SEVERITIES: readonly Severity[] = ['error', 'warning', 'info', 'hint', 'off'];

export function isTarget(value: unknown): value is string {
  return typeof value === 'string' && TARGET_RE.test(value);
}

/** A problem found while reading settings; the value fell back to its default. */
export interface SettingProblem {
  key: string;
  message: string;
}

/** A copy of a setting's value. Settings are JSON; VS Code hands object values out as Proxies, which
 * `structuredClone` refuses (DataCloneError), so the extension failed to activate once an object setting was read. */
function jsonCopy(value: unknown): unknown {
  return value === undefined ? undefined : JSON.parse(JSON.stringify(value));
}

/**
 * Turns raw configuration values (`get('target')` → whatever the user wrote) into settings the
 * server can rely on. Never throws: a bad value is replaced by its default and reported.
 */
export function readSettings(get: (key: string) => unknown, problems: SettingProblem[] = []): ServerSettings {
  const bad = (key: string, value: unknown, why: string) =>
    problems.push({ key: `tritonlens.${key}`, message: `${JSON.stringify(value)} ${why}; using the default` });

  const pick = <K extends keyof ServerSettings>(key: K, ok: (v: unknown) => boolean, why: string): ServerSettings[K] => {
    const value = get(key);
    if (value === undefined || value === null) {
      return jsonCopy(DEFAULT_SETTINGS[key]) as ServerSettings[K];
    }
    if (!ok(value)) {
      bad(key, value, why);
      return jsonCopy(DEFAULT_SETTINGS[key]) as ServerSettings[K];
    }
    return jsonCopy(value) as ServerSettings[K];
  };
  const positive = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v > 0;
  const positiveInt = (v: unknown) => positive(v) && Number.isInteger(v);
  const count = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  const fraction = (v: unknown) => typeof v === 'number' && Number.isFinite(v) && v >= 0 && v <= 1;

  const settings: ServerSettings = {
    target: pick('target', isTarget, 'is not a target (auto, cuda:<sm>, hip:<arch>)'),
    extraTargets: pick('extraTargets', (v) => Array.isArray(v) && v.every((t) => isTarget(t) && t !== 'auto'),
      'is not a list of targets'),
    compileOn: pick('compileOn', (v) => v === 'save' || v === 'change', 'is not "save" or "change"'),
    compileTimeout: pick('compileTimeout', positive, 'is not a positive number of seconds'),
    maxWorkers: pick('maxWorkers', count, 'is not a whole number (0: from the cores)'),
    moduleExecution: pick('moduleExecution', (v) => v === 'definitions' || v === 'full',
      'is not "definitions" or "full"'),
    stormThreshold: pick('stormThreshold', positiveInt, 'is not a positive integer'),
    rules: {},
    interpreter: pick('interpreter', (v) => Array.isArray(v) && v.every((s) => typeof s === 'string' && s !== ''),
      'is not a list of non-empty strings'),
    allCaptures: pick('allCaptures', (v) => typeof v === 'boolean', 'is not true or false'),
    maxCapturedSpecs: pick('maxCapturedSpecs', positiveInt, 'is not a positive integer'),
    compileMemoryMB: pick('compileMemoryMB', count, 'is not a whole number of MB (0: no bound)'),
    maskedLaneThreshold: pick('maskedLaneThreshold', fraction, 'is not a fraction between 0 and 1'),
    gridFillThreshold: pick('gridFillThreshold', fraction, 'is not a fraction between 0 and 1'),
    smCount: pick('smCount', count, 'is not a whole number (0: from the GPU or the target)'),
    gpu: pick('gpu', (v) => typeof v === 'string', 'is not a GPU name (h100, h200, b200, a100, mi300x, ...)'),
    env: pick('env', (v) => typeof v === 'object' && v !== null && !Array.isArray(v)
      && Object.values(v as Record<string, unknown>).every((x) => typeof x === 'string'),
    'is not an object of NAME → string value'),
    severityFromCost: pick('severityFromCost', (v) => typeof v === 'boolean', 'is not true or false'),
    autoCapture: pick('autoCapture', (v) => typeof v === 'boolean', 'is not true or false'),
    autoCaptureTimeout: pick('autoCaptureTimeout', positive, 'is not a positive number of seconds'),
  };

  // Rules are checked one by one so a single typo does not drop the user's other choices.
  const rules = get('rules');
  if (rules !== undefined && rules !== null) {
    if (typeof rules !== 'object' || Array.isArray(rules)) {
      bad('rules', rules, 'is not an object of code → severity');
    } else {
      for (const [code, severity] of Object.entries(rules as Record<string, unknown>)) {
        if (SEVERITIES.includes(severity as Severity)) {
          settings.rules[code] = severity as Severity;
        } else {
          bad(`rules.${code}`, severity, `is not one of ${SEVERITIES.join(', ')}`);
        }
      }
    }
  }
  return settings;
}

/** The initializationOptions object: exactly the setting keys, camelCase. */
export function initializationOptions(settings: ServerSettings): ServerSettings {
  const out = {} as Record<string, unknown>;
  for (const key of SETTING_KEYS) {
    out[key] = settings[key];
  }
  return out as unknown as ServerSettings;
}

/** The params of workspace/didChangeConfiguration. */
export function didChangeConfigurationParams(settings: ServerSettings): { settings: { tritonlens: ServerSettings } } {
  return { settings: { tritonlens: initializationOptions(settings) } };
}

/** Whether a settings change needs a new server process rather than a notification. */
export function needsRestart(before: ServerSettings, after: ServerSettings): boolean {
  return JSON.stringify(before.interpreter) !== JSON.stringify(after.interpreter);
}
