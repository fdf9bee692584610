// Which Python runs the server, and whether it can: resolution (setting → Python extension → workspace venv → PATH),
// the import check, and the pip command that fixes what is missing. No VS Code calls here.

import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

/** The Python packages the server imports, with the requirement pip installs for each. */
export const SERVER_MODULES: readonly { module: string; requirement: string }[] = [
  { module: 'triton', requirement: 'triton>=3.4' },
  { module: 'pygls', requirement: 'pygls>=2.0,<3' },
  { module: 'lsprotocol', requirement: 'lsprotocol>=2025.0.0' },
  { module: 'watchdog', requirement: 'watchdog>=4' },
];

export type InterpreterSource = 'setting' | 'python-extension' | 'workspace-venv' | 'path';

export interface Interpreter {
  /** The command: executable first, then any arguments that must precede `-m` (e.g. `conda run -n x python`). */
  command: string[];
  source: InterpreterSource;
}

/** What the Python extension's environments API gives us, reduced to what we use. */
export interface PythonEnvironments {
  activeExecutable(resource?: string): Promise<string | undefined>;
}

/** Expands `${workspaceFolder}`, `${userHome}` and a leading `~` in the interpreter setting. */
export function expandVariables(arg: string, vars: { workspaceFolder?: string; userHome?: string }): string {
  let out = arg;
  if (vars.userHome !== undefined) {
    out = out.replace(/\$\{userHome\}/g, vars.userHome);
    if (out === '~' || out.startsWith('~/')) {
      out = vars.userHome + out.slice(1);
    }
  }
  if (vars.workspaceFolder !== undefined) {
    out = out.replace(/\$\{workspaceFolder\}/g, vars.workspaceFolder);
  }
  return out;
}

/** The interpreter of a virtual environment in the workspace folder (`.venv`, then `venv`), if there is one. */
export function workspaceVenvPython(
  workspaceFolder: string | undefined,
  platform: string,
  exists: (file: string) => boolean,
): string | undefined {
  if (!workspaceFolder) {
    return undefined;
  }
  const win = platform === 'win32';
  const join = win ? path.win32.join : path.posix.join;
  for (const venv of ['.venv', 'venv']) {
    const python = win ? join(workspaceFolder, venv, 'Scripts', 'python.exe') : join(workspaceFolder, venv, 'bin', 'python');
    if (exists(python)) {
      return python;
    }
  }
  return undefined;
}

/**
 * `tritonlens.interpreter` wins when set; then the Python extension's active interpreter for the workspace; then
 * the workspace's own virtual environment (`.venv`/`venv`); then, only when the Python extension is not
 * installed, `python3` (`python` on Windows) from PATH — the login shell's Python rarely has triton, and pip would
 * be offered into it. Undefined means the Python extension has no interpreter selected and there is no venv.
 */
export async function resolveInterpreter(
  setting: readonly string[],
  python: PythonEnvironments | undefined,
  opts: {
    resource?: string;
    workspaceFolder?: string;
    userHome?: string;
    platform?: string;
    exists?: (file: string) => boolean;
  } = {},
): Promise<Interpreter | undefined> {
  if (setting.length > 0) {
    return { command: setting.map((a) => expandVariables(a, opts)), source: 'setting' };
  }
  const platform = opts.platform ?? process.platform;
  const executable = python ? await python.activeExecutable(opts.resource) : undefined;
  if (executable) {
    return { command: [executable], source: 'python-extension' };
  }
  const venv = workspaceVenvPython(opts.workspaceFolder, platform, opts.exists ?? fs.existsSync);
  if (venv) {
    return { command: [venv], source: 'workspace-venv' };
  }
  if (python) {
    return undefined;
  }
  return { command: [platform === 'win32' ? 'python' : 'python3'], source: 'path' };
}

/** Runs a command and collects its output; injected so tests need no Python. */
export type Runner = (
  command: string,
  args: string[],
  env: Record<string, string | undefined>,
) => Promise<{ code: number | null; stdout: string; stderr: string }>;

/**
 * Every Python the client starts runs isolated (`-I`: neither its working directory nor PYTHONPATH is on its
 * import path, so a workspace's `json.py` or `logging.py` never runs in it) in a folder that is not the workspace
 * (`NEUTRAL_CWD`); the bundled server folder is put on the import path by the command itself (`BOOT`'s first
 * argument, empty when there is none). The server learns its workspace from the LSP `initialize` request.
 */
export const ISOLATED = '-I';
export const NEUTRAL_CWD = os.tmpdir();
const BOOT = 'import sys; d = sys.argv.pop(1); d and sys.path.insert(0, d)';

/** Prints, as JSON, which of the modules the server needs can be found, and where tritonlens comes from. */
export const PROBE_SCRIPT = [
  BOOT,
  'import importlib.util, json',
  'mods = ["tritonlens"] + sys.argv[1:]',
  'found = {m: importlib.util.find_spec(m) is not None for m in mods}',
  'spec = importlib.util.find_spec("tritonlens")',
  'origin = spec.origin if spec else None',
  'print(json.dumps({"found": found, "origin": origin, "version": sys.version.split()[0], "executable": sys.executable}))',
].join('\n');

export interface Probe {
  ok: boolean;
  /** Interpreter could not be run at all (missing file, crash). */
  error?: string;
  /** Modules of SERVER_MODULES that are missing, plus 'tritonlens' when the package is not importable. */
  missing: string[];
  pythonVersion?: string;
  executable?: string;
  tritonlensOrigin?: string | null;
}

/** PYTHONPATH with the bundled server first, keeping what the user had. */
export function serverPythonPath(bundledServerDir: string | undefined, existing: string | undefined): string | undefined {
  const parts = [bundledServerDir, existing].filter((p): p is string => !!p);
  return parts.length > 0 ? parts.join(path.delimiter) : undefined;
}

export function serverEnv(
  bundledServerDir: string | undefined,
  baseEnv: Record<string, string | undefined>,
): Record<string, string | undefined> {
  const env: Record<string, string | undefined> = { ...baseEnv, PYTHONUNBUFFERED: '1' };
  const pythonPath = serverPythonPath(bundledServerDir, baseEnv.PYTHONPATH);
  if (pythonPath !== undefined) {
    env.PYTHONPATH = pythonPath;
  }
  return env;
}

export async function probeInterpreter(
  interpreter: Interpreter,
  run: Runner,
  env: Record<string, string | undefined>,
  modules: readonly string[] = SERVER_MODULES.map((m) => m.module),
  bundledServerDir?: string,
): Promise<Probe> {
  const [exe, ...pre] = interpreter.command;
  let result;
  try {
    result = await run(exe, [...pre, ISOLATED, '-c', PROBE_SCRIPT, bundledServerDir ?? '', ...modules], env);
  } catch (err) {
    return { ok: false, error: String((err as Error)?.message ?? err), missing: [] };
  }
  if (result.code !== 0) {
    return { ok: false, error: (result.stderr || result.stdout).trim() || `exit code ${result.code}`, missing: [] };
  }
  // The last line is ours: activation scripts or sitecustomize may print before it.
  const line = result.stdout.trim().split(/\r?\n/).pop() ?? '';
  let parsed: { found: Record<string, boolean>; origin: string | null; version: string; executable: string };
  try {
    parsed = JSON.parse(line);
  } catch {
    return { ok: false, error: `unexpected output from the interpreter: ${line.slice(0, 200)}`, missing: [] };
  }
  const missing = Object.entries(parsed.found).filter(([, ok]) => !ok).map(([m]) => m);
  return {
    ok: missing.length === 0,
    missing,
    pythonVersion: parsed.version,
    executable: parsed.executable,
    tritonlensOrigin: parsed.origin,
  };
}

/**
 * The pip command that makes the server runnable, or undefined when pip cannot fix it
 * (tritonlens itself is missing and there is no bundled copy to put on PYTHONPATH).
 */
export function installCommand(
  interpreter: Interpreter,
  missing: readonly string[],
  hasBundledServer: boolean,
  requirements: readonly { module: string; requirement: string }[] = SERVER_MODULES,
): string[] | undefined {
  if (missing.includes('tritonlens') && !hasBundledServer) {
    return undefined;
  }
  const reqs = requirements.filter((r) => missing.includes(r.module)).map((r) => r.requirement);
  if (reqs.length === 0) {
    return undefined;
  }
  return [...interpreter.command, ISOLATED, '-m', 'pip', 'install', ...reqs];
}

/** Reads requirement lines written at package time (`name>=x` per line); falls back to SERVER_MODULES. */
export function parseRequirements(text: string | undefined): { module: string; requirement: string }[] {
  if (!text) {
    return [...SERVER_MODULES];
  }
  const out: { module: string; requirement: string }[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/#.*/, '').trim();
    const name = /^([A-Za-z0-9][A-Za-z0-9._-]*)/.exec(line)?.[1];
    if (name) {
      out.push({ module: name.toLowerCase().replace(/-/g, '_'), requirement: line });
    }
  }
  return out.length > 0 ? out : [...SERVER_MODULES];
}

/** The server process: `<python> -I -m tritonlens serve`, or with a bundled server
 * `<python> -I -c <BOOT; run the CLI> <bundled server folder> serve`; started in NEUTRAL_CWD. */
export function serverCommand(
  interpreter: Interpreter,
  bundledServerDir?: string,
): { command: string; args: string[]; cwd: string } {
  const [command, ...pre] = interpreter.command;
  const start = bundledServerDir
    ? ['-c', `${BOOT}; from tritonlens.cli import main; sys.exit(main())`, bundledServerDir]
    : ['-m', 'tritonlens'];
  return { command, args: [...pre, ISOLATED, ...start, 'serve'], cwd: NEUTRAL_CWD };
}
