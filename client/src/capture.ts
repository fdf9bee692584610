// "Capture launches": run the user's command (tritonlens.captureCommand) under `tritonlens capture` in the
// workspace, on the local GPU — or, where none is visible, `tritonlens capture --no-gpu --target T` (launches
// recorded for target T, no kernel run) — with its output in the output channel; cancellable. The server's lens
// (`tritonlens.capture`, arguments [{uri, kernel, gpu, noGpu, doc}]) offers it on kernels without a complete spec;
// the captures file it writes is watched by the server, and a recompile is asked for too.

export const CAPTURE_COMMAND = 'tritonlens.capture';

export interface CaptureTarget {
  uri: string;
  kernel: string;
  /** The local GPU's target (e.g. "cuda:90"), or null when the server saw none. */
  gpu: string | null;
  /** Without a GPU: the target a capture records its launches for (`capture --no-gpu --target`), else null. */
  noGpu: string | null;
  /** Without a GPU: the virtual GPU the capture answers as (`capture --no-gpu --gpu`, tritonlens.gpu), if named. */
  virtualGpu?: string;
  doc: string;
}

export function parseCaptureArgs(args: unknown): CaptureTarget | undefined {
  const first = Array.isArray(args) ? (Array.isArray(args[0]) ? args[0][0] : args[0]) : args;
  if (!first || typeof first !== 'object') {
    return undefined;
  }
  const a = first as Record<string, unknown>;
  if (typeof a.uri !== 'string' || typeof a.kernel !== 'string') {
    return undefined;
  }
  return {
    uri: a.uri,
    kernel: a.kernel,
    gpu: typeof a.gpu === 'string' && a.gpu ? a.gpu : null,
    noGpu: typeof a.noGpu === 'string' && /^[a-z]+:\w+$/.test(a.noGpu) ? a.noGpu : null,
    ...(typeof a.virtualGpu === 'string' && /^[a-z0-9-]+$/.test(a.virtualGpu) ? { virtualGpu: a.virtualGpu } : {}),
    doc: typeof a.doc === 'string' ? a.doc : '',
  };
}

/**
 * Splits a command line as a POSIX shell would for plain words: whitespace separates, '...' is literal,
 * "..." and a backslash escape. No variables, globs or pipes (run `bash -c '...'` for those).
 * Returns undefined for an unterminated quote.
 */
export function splitCommandLine(line: string): string[] | undefined {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") {
        quote = null;
      } else {
        word += c;
      }
    } else if (c === '\\' && i + 1 < line.length && (quote === null || '"\\$`'.includes(line[i + 1]))) {
      word += line[++i];
      inWord = true;
    } else if (quote === '"') {
      if (c === '"') {
        quote = null;
      } else {
        word += c;
      }
    } else if (c === '"' || c === "'") {
      quote = c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) {
        words.push(word);
      }
      word = '';
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (quote !== null) {
    return undefined;
  }
  if (inWord) {
    words.push(word);
  }
  return words;
}

/** `<python> -m tritonlens capture [--no-gpu --target T [--gpu NAME]] -- <the user's command>`. */
export function captureInvocation(
  python: readonly string[],
  words: readonly string[],
  noGpu: string | null = null,
  virtualGpu: string | null = null,
): { command: string; args: string[] } {
  const [command, ...pre] = python;
  const mode = noGpu ? ['--no-gpu', '--target', noGpu, ...(virtualGpu ? ['--gpu', virtualGpu] : [])] : [];
  return { command, args: [...pre, '-m', 'tritonlens', 'capture', ...mode, '--', ...words] };
}

/** What the lens's click does, decided before anything runs. */
export type CapturePlan =
  | { kind: 'untrusted' }
  | { kind: 'no-gpu'; message: string; doc: string }
  | { kind: 'ask-command' }
  | { kind: 'bad-command'; message: string }
  | { kind: 'run'; words: string[]; noGpu: string | null; virtualGpu?: string };

export function planCapture(target: CaptureTarget, trusted: boolean, commandLine: string): CapturePlan {
  if (!trusted) {
    return { kind: 'untrusted' };
  }
  if (!target.gpu && !target.noGpu) {
    // A server that offers no capture without a GPU: only say how to get captures.
    return {
      kind: 'no-gpu',
      doc: target.doc,
      message:
        `tritonlens: capturing ${target.kernel}'s launches runs your code on a GPU, and none is visible here. ` +
        'Run `tritonlens capture -- <your tests>` on a GPU machine and bring .tritonlens/captures.jsonl here, ' +
        `or give the missing values in a hint (# tritonlens: NAME=value).`,
    };
  }
  if (!commandLine.trim()) {
    return { kind: 'ask-command' };
  }
  const words = splitCommandLine(commandLine);
  if (!words || words.length === 0) {
    return { kind: 'bad-command', message: `tritonlens.captureCommand has an unterminated quote: ${commandLine}` };
  }
  const virtualGpu = !target.gpu && target.noGpu && target.virtualGpu ? { virtualGpu: target.virtualGpu } : {};
  return { kind: 'run', words, noGpu: target.gpu ? null : target.noGpu, ...virtualGpu };
}

/** The part of a child process a capture run needs (Node's ChildProcess fits). */
export interface ChildLike {
  stdout: { on(event: 'data', listener: (chunk: Buffer | string) => void): unknown } | null;
  stderr: { on(event: 'data', listener: (chunk: Buffer | string) => void): unknown } | null;
  on(event: 'close', listener: (code: number | null, signal: string | null) => void): unknown;
  on(event: 'error', listener: (err: Error) => void): unknown;
}

export interface CaptureResult {
  ok: boolean;
  cancelled: boolean;
  code: number | null;
  error?: string;
}

/**
 * Runs one capture: starts the child, streams its lines to `line`, and resolves when it ends. `onCancel`
 * registers the stop handler (the progress notification's Cancel); `stop` ends the child's process group.
 */
export function runCapture(
  start: () => ChildLike,
  line: (text: string, stream: 'stdout' | 'stderr') => void,
  onCancel: (handler: () => void) => void,
  stop: () => void,
): Promise<CaptureResult> {
  return new Promise((resolve) => {
    let cancelled = false;
    let child: ChildLike;
    try {
      child = start();
    } catch (err) {
      resolve({ ok: false, cancelled, code: null, error: String(err) });
      return;
    }
    const held = { stdout: '', stderr: '' };
    const forward = (stream: 'stdout' | 'stderr') => (chunk: Buffer | string) => {
      const parts = (held[stream] + chunk.toString()).split(/\r?\n/);
      held[stream] = parts.pop() ?? '';
      parts.forEach((p) => line(p, stream));
    };
    child.stdout?.on('data', forward('stdout'));
    child.stderr?.on('data', forward('stderr'));
    onCancel(() => {
      cancelled = true;
      stop();
    });
    child.on('error', (err) => resolve({ ok: false, cancelled, code: null, error: String(err) }));
    child.on('close', (code) => {
      for (const stream of ['stdout', 'stderr'] as const) {
        if (held[stream]) {
          line(held[stream], stream);
        }
      }
      resolve({ ok: code === 0 && !cancelled, cancelled, code });
    });
  });
}

/** Everything `captureLaunches` touches outside itself: VS Code, the process, the server. */
export interface CaptureDeps {
  trusted(): boolean;
  commandLine(): string;
  /** Asks for the command (and saves it as tritonlens.captureCommand); undefined when dismissed. */
  askCommandLine(): Thenable<string | undefined>;
  python(): { command: readonly string[]; env: Record<string, string | undefined> } | undefined;
  cwd(): string | undefined;
  spawn(command: string, args: string[], cwd: string | undefined, env: Record<string, string | undefined>): ChildLike;
  /** Ends the child and what it started (its process group). */
  stop(child: ChildLike): void;
  progress<R>(
    title: string,
    task: (onCancel: (handler: () => void) => void, report: (message: string) => void) => Promise<R>,
  ): Thenable<R>;
  log(text: string, level: 'info' | 'warn' | 'error'): void;
  message(level: 'info' | 'warn' | 'error', text: string, ...actions: string[]): Thenable<string | undefined>;
  openExternal(url: string): Thenable<unknown>;
  recompile(uri: string): Thenable<unknown>;
}

/** The lens's click: decide, maybe ask for the command, run it under capture, then recompile the file. */
export async function captureLaunches(args: unknown, deps: CaptureDeps): Promise<CaptureResult | undefined> {
  const target = parseCaptureArgs(args);
  if (!target) {
    deps.log(`${CAPTURE_COMMAND}: bad arguments ${JSON.stringify(args)}`, 'warn');
    return undefined;
  }
  let plan = planCapture(target, deps.trusted(), deps.commandLine());
  if (plan.kind === 'ask-command') {
    const typed = await deps.askCommandLine();
    if (!typed?.trim()) {
      return undefined;
    }
    plan = planCapture(target, deps.trusted(), typed);
  }
  if (plan.kind === 'untrusted') {
    void deps.message('warn', 'tritonlens: capturing runs your code; trust the workspace first.');
    return undefined;
  }
  if (plan.kind === 'no-gpu') {
    if ((await deps.message('info', plan.message, 'Open docs')) && plan.doc) {
      await deps.openExternal(plan.doc);
    }
    return undefined;
  }
  if (plan.kind === 'bad-command' || plan.kind === 'ask-command') {
    void deps.message('error', plan.kind === 'bad-command' ? plan.message : 'tritonlens: no capture command');
    return undefined;
  }
  const python = deps.python();
  if (!python) {
    void deps.message('error', 'tritonlens: no Python interpreter yet (the server has not started); see Output.');
    return undefined;
  }
  const words = plan.words;
  const { command, args: argv } = captureInvocation(python.command, words, plan.noGpu, plan.virtualGpu ?? null);
  const cwd = deps.cwd();
  deps.log(`$ ${[command, ...argv].join(' ')}${cwd ? `  (in ${cwd})` : ''}`, 'info');
  const how = plan.noGpu ? ` without a GPU (for ${plan.noGpu})` : '';
  const result = await deps.progress(`tritonlens: capturing launches${how} of ${words.join(' ')}`, (onCancel, report) => {
    let child: ChildLike | undefined;
    return runCapture(
      () => (child = deps.spawn(command, argv, cwd, python.env)),
      (text, stream) => {
        deps.log(text, stream === 'stderr' ? 'warn' : 'info');
        if (text.trim()) {
          report(text.trim().slice(0, 100));
        }
      },
      onCancel,
      () => child && deps.stop(child),
    );
  });
  if (result.cancelled) {
    deps.log('capture cancelled', 'warn');
  } else if (result.ok) {
    void deps.message('info', `tritonlens: launches captured; re-checking ${target.kernel}.`);
    await deps.recompile(target.uri);
  } else if (plan.noGpu) {
    // Host code that needs torch.cuda cannot run here: the output names the first such call.
    const failed = `tritonlens: the capture without a GPU failed (${result.error ?? `exit code ${result.code}`}); ` +
      'see Output — a program that needs torch.cuda must take its device from a variable (CPU tensors here).';
    if ((await deps.message('error', failed, 'Open docs')) && target.doc) {
      await deps.openExternal(target.doc);
    }
  } else {
    void deps.message('error', `tritonlens: the capture failed (${result.error ?? `exit code ${result.code}`}); see Output.`);
  }
  return result;
}
