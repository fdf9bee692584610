import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import { CaptureDeps, ChildLike, captureInvocation, captureLaunches, planCapture, splitCommandLine } from '../src/capture';

const LENS_ARGS = [{ uri: 'file:///ws/k.py', kernel: 'rms_norm', gpu: 'cuda:90', doc: 'https://example.org/gpu.md' }];

test('capture: the command line is split like a shell does for plain words', () => {
  assert.deepEqual(splitCommandLine('pytest tests/test_rms_norm.py -x'), ['pytest', 'tests/test_rms_norm.py', '-x']);
  assert.deepEqual(splitCommandLine(`python -c "print('a b')"  -k 'x y'`), ['python', '-c', "print('a b')", '-k', 'x y']);
  assert.deepEqual(splitCommandLine('a\\ b "" c'), ['a b', '', 'c']);
  assert.equal(splitCommandLine('pytest "unterminated'), undefined);
  assert.deepEqual(captureInvocation(['/venv/bin/python', '-X', 'utf8'], ['pytest', '-x']), {
    command: '/venv/bin/python',
    args: ['-X', 'utf8', '-m', 'tritonlens', 'capture', '--', 'pytest', '-x'],
  });
});

test('capture: refused untrusted, explained without a GPU, asked for when unset', () => {
  const target = { uri: 'file:///ws/k.py', kernel: 'k', gpu: 'cuda:90', noGpu: null, doc: 'd' };
  assert.equal(planCapture(target, false, 'pytest').kind, 'untrusted');
  const cpu = planCapture({ ...target, gpu: null }, true, 'pytest');
  assert.equal(cpu.kind, 'no-gpu');
  assert.match(cpu.kind === 'no-gpu' ? cpu.message : '', /GPU machine.*captures\.jsonl.*hint/s);
  assert.equal(planCapture(target, true, '  ').kind, 'ask-command');
  assert.equal(planCapture(target, true, 'pytest "x').kind, 'bad-command');
  assert.deepEqual(planCapture(target, true, 'pytest -x'), { kind: 'run', words: ['pytest', '-x'], noGpu: null });
  const noGpu = { ...target, gpu: null, noGpu: 'cuda:90' };
  assert.deepEqual(planCapture(noGpu, true, 'pytest -x'), { kind: 'run', words: ['pytest', '-x'], noGpu: 'cuda:90' });
  assert.equal(planCapture(noGpu, false, 'pytest -x').kind, 'untrusted');
  assert.equal(planCapture(noGpu, true, '').kind, 'ask-command');
});

test('capture: without a GPU, the virtual GPU the server names (tritonlens.gpu) goes on the command line', () => {
  const target = { uri: 'file:///ws/k.py', kernel: 'k', gpu: null, noGpu: 'cuda:90', virtualGpu: 'h200', doc: 'd' };
  const plan = planCapture(target, true, 'pytest -x');
  assert.deepEqual(plan, { kind: 'run', words: ['pytest', '-x'], noGpu: 'cuda:90', virtualGpu: 'h200' });
  assert.deepEqual(captureInvocation(['python'], ['pytest'], 'cuda:90', 'h200').args,
    ['-m', 'tritonlens', 'capture', '--no-gpu', '--target', 'cuda:90', '--gpu', 'h200', '--', 'pytest']);
});

/** A child process that the test ends by hand; `stopped` says whether Cancel reached it. */
class FakeChild extends EventEmitter implements ChildLike {
  stdout = new EventEmitter();
  stderr = new EventEmitter();
  stopped = false;
}

function fakeDeps(overrides: Partial<CaptureDeps> = {}) {
  const seen = { spawned: [] as { command: string; args: string[]; cwd?: string }[], logs: [] as string[],
    messages: [] as string[], recompiled: [] as string[], opened: [] as string[], saved: [] as string[] };
  const child = new FakeChild();
  let cancel: (() => void) | undefined;
  const deps: CaptureDeps = {
    trusted: () => true,
    commandLine: () => 'pytest tests/test_rms_norm.py -x',
    askCommandLine: async () => undefined,
    python: () => ({ command: ['/venv/bin/python'], env: {} }),
    cwd: () => '/ws',
    spawn: (command, args, cwd) => {
      seen.spawned.push({ command, args, cwd });
      return child;
    },
    stop: (c) => {
      (c as FakeChild).stopped = true;
      (c as FakeChild).emit('close', null, 'SIGTERM');
    },
    progress: (_title, task) => task((h) => (cancel = h), () => undefined),
    log: (text) => seen.logs.push(text),
    message: async (_level, text) => {
      seen.messages.push(text);
      return 'Open docs';
    },
    openExternal: async (url) => seen.opened.push(url),
    recompile: async (uri) => seen.recompiled.push(uri),
    ...overrides,
  };
  return { deps, seen, child, cancel: () => cancel?.() };
}

test('capture: runs the command under tritonlens capture, streams its output, then recompiles', async () => {
  const { deps, seen, child } = fakeDeps();
  const running = captureLaunches(LENS_ARGS, deps);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen.spawned, [{
    command: '/venv/bin/python',
    args: ['-m', 'tritonlens', 'capture', '--', 'pytest', 'tests/test_rms_norm.py', '-x'],
    cwd: '/ws',
  }]);
  child.stdout.emit('data', Buffer.from('collected 3 items\ntests/test_rms'));
  child.stderr.emit('data', 'a warning\n');
  child.stdout.emit('data', '_norm.py ...\ncaptured 12 specs'); // the last line has no newline: flushed at exit
  child.emit('close', 0, null);
  const result = await running;
  assert.equal(result?.ok, true);
  for (const line of ['collected 3 items', 'a warning', 'tests/test_rms_norm.py ...', 'captured 12 specs']) {
    assert.ok(seen.logs.includes(line), `${line} not in ${seen.logs.join('|')}`);
  }
  assert.deepEqual(seen.recompiled, ['file:///ws/k.py']);
});

test('capture: Cancel stops the process group and recompiles nothing', async () => {
  const { deps, seen, child, cancel } = fakeDeps();
  const running = captureLaunches(LENS_ARGS, deps);
  await new Promise((r) => setImmediate(r));
  cancel();
  const result = await running;
  assert.equal(child.stopped, true);
  assert.equal(result?.cancelled, true);
  assert.deepEqual(seen.recompiled, []);
});

const NO_GPU_ARGS = [{ ...LENS_ARGS[0], gpu: null, noGpu: 'cuda:90' }];

test('capture without a GPU: runs capture --no-gpu for the target, streams, then recompiles', async () => {
  const { deps, seen, child } = fakeDeps();
  const titles: string[] = [];
  deps.progress = (title, task) => (titles.push(title), task(() => undefined, () => undefined));
  const running = captureLaunches(NO_GPU_ARGS, deps);
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(seen.spawned, [{
    command: '/venv/bin/python',
    args: ['-m', 'tritonlens', 'capture', '--no-gpu', '--target', 'cuda:90', '--', 'pytest', 'tests/test_rms_norm.py', '-x'],
    cwd: '/ws',
  }]);
  assert.match(titles[0], /without a GPU \(for cuda:90\)/);
  child.stdout.emit('data', 'recorded 4 launches\n');
  child.emit('close', 0, null);
  assert.equal((await running)?.ok, true);
  assert.ok(seen.logs.includes('recorded 4 launches'));
  assert.deepEqual(seen.recompiled, ['file:///ws/k.py']);
});

test('capture without a GPU: Cancel stops it; a failure (torch.cuda) points at the docs; untrusted runs nothing', async () => {
  const cancelled = fakeDeps();
  const running = captureLaunches(NO_GPU_ARGS, cancelled.deps);
  await new Promise((r) => setImmediate(r));
  cancelled.cancel();
  assert.equal((await running)?.cancelled, true);
  assert.equal(cancelled.child.stopped, true);
  assert.deepEqual(cancelled.seen.recompiled, []);

  const failing = fakeDeps();
  const run2 = captureLaunches(NO_GPU_ARGS, failing.deps);
  await new Promise((r) => setImmediate(r));
  failing.child.stderr.emit('data', 'tritonlens capture: torch.cuda.synchronize needs a GPU\n');
  failing.child.emit('close', 3, null);
  assert.equal((await run2)?.ok, false);
  assert.deepEqual(failing.seen.recompiled, []);
  assert.match(failing.seen.messages.at(-1) ?? '', /without a GPU failed.*torch\.cuda/);
  assert.deepEqual(failing.seen.opened, ['https://example.org/gpu.md']);

  const untrusted = fakeDeps({ trusted: () => false });
  await captureLaunches(NO_GPU_ARGS, untrusted.deps);
  assert.deepEqual(untrusted.seen.spawned, []);
});

test('capture: from a server without the no-GPU capture only the way to get captures is shown', async () => {
  const { deps, seen } = fakeDeps();
  await captureLaunches([{ ...LENS_ARGS[0], gpu: null }], deps);
  assert.deepEqual(seen.spawned, []);
  assert.deepEqual(seen.opened, ['https://example.org/gpu.md']);
});

test('capture: an unset command is asked for; dismissing the question runs nothing', async () => {
  const asked: string[] = [];
  const { deps, seen } = fakeDeps({ commandLine: () => '', askCommandLine: async () => (asked.push('?'), undefined) });
  assert.equal(await captureLaunches(LENS_ARGS, deps), undefined);
  assert.deepEqual(asked, ['?']);
  assert.deepEqual(seen.spawned, []);
  const untrusted = fakeDeps({ trusted: () => false });
  await captureLaunches(LENS_ARGS, untrusted.deps);
  assert.deepEqual(untrusted.seen.spawned, []);
});
