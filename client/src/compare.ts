// "Compare with another Triton release": pick a release (or an interpreter), ask the server to compile the open
// file's kernels under the installed Triton and under that one (its `tritonlens.compare` command), and show the
// report as a document. The server then puts a lens with each kernel's summary, which runs this command again with
// the same release. Plain logic here; VS Code is reached through `CompareDeps` (extension.ts wires it).

export const COMPARE_COMMAND = 'tritonlens.compareWithRelease';
export const COMPARE_SERVER_COMMAND = 'tritonlens.compare';
/** Releases offered first (newest first); any other version or an interpreter can be typed. */
export const RELEASES = ['3.9.0', '3.8.0', '3.7.1', '3.7.0', '3.6.0'];
export const OTHER_VERSION = 'Another release…';
export const OTHER_PYTHON = 'An interpreter with another Triton…';

export interface CompareArgs {
  uri: string;
  release?: string;
  python?: string;
}

export interface CompareAnswer {
  text?: string;
  headline?: string;
  gated?: number;
  error?: string;
  cancelled?: boolean;
}

export interface CompareDeps {
  /** The URI of the active Python document, if any. */
  activeUri(): string | undefined;
  pick(items: string[], title: string): Promise<string | undefined>;
  ask(prompt: string, placeHolder: string): Promise<string | undefined>;
  /** Runs the server command (with progress shown); undefined when the server is not running. */
  run(args: CompareArgs): Promise<CompareAnswer | undefined>;
  show(text: string, title: string): Promise<void>;
  info(message: string): void;
}

/** The lens's arguments (VS Code spreads `[{uri, release}]`), or undefined: the palette gives none. */
export function parseCompareArgs(args: unknown[]): CompareArgs | undefined {
  const flat = args.flatMap((a) => (Array.isArray(a) ? a : [a]));
  for (const a of flat) {
    if (a && typeof a === 'object') {
      const o = a as Record<string, unknown>;
      if (typeof o.uri === 'string' && (typeof o.release === 'string' || typeof o.python === 'string')) {
        return {
          uri: o.uri,
          ...(typeof o.release === 'string' ? { release: o.release } : {}),
          ...(typeof o.python === 'string' ? { python: o.python } : {}),
        };
      }
    }
  }
  return undefined;
}

const VERSION = /^\d+(\.\d+){1,3}([a-z]+\d*)?$/;

async function pickOther(deps: CompareDeps): Promise<{ release?: string; python?: string } | undefined> {
  const choice = await deps.pick([...RELEASES, OTHER_VERSION, OTHER_PYTHON], 'tritonlens: compare with which Triton?');
  if (!choice) {
    return undefined;
  }
  if (choice === OTHER_PYTHON) {
    const python = (await deps.ask('The interpreter whose triton is the other release', '/path/to/venv/bin/python'))?.trim();
    return python ? { python } : undefined;
  }
  const version = choice === OTHER_VERSION ? (await deps.ask('A Triton release on PyPI', '3.7.1'))?.trim() : choice;
  if (!version) {
    return undefined;
  }
  if (!VERSION.test(version)) {
    deps.info(`tritonlens: ${version} is not a Triton release number (e.g. 3.7.1).`);
    return undefined;
  }
  return { release: version };
}

export async function compareWithRelease(args: unknown[], deps: CompareDeps): Promise<CompareAnswer | undefined> {
  let request = parseCompareArgs(args);
  if (!request) {
    const uri = deps.activeUri();
    if (!uri) {
      deps.info('tritonlens: open a Python file with @triton.jit kernels to compare it.');
      return undefined;
    }
    const other = await pickOther(deps);
    if (!other) {
      return undefined;
    }
    request = { uri, ...other };
  }
  const answer = await deps.run(request);
  if (answer?.text) {
    await deps.show(answer.text, `tritonlens: vs ${request.release ?? request.python}`);
  } else if (answer?.error) {
    deps.info(`tritonlens compare: ${answer.error}`);
  }
  return answer;
}
