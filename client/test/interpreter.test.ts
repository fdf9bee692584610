import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import * as cp from 'node:child_process';
import * as path from 'node:path';
import {
  expandVariables,
  installCommand,
  NEUTRAL_CWD,
  Interpreter,
  parseRequirements,
  probeInterpreter,
  resolveInterpreter,
  Runner,
  serverCommand,
  serverEnv,
  SERVER_MODULES,
} from '../src/interpreter';

const pythonExtension = (executable: string | undefined) => {
  const calls: (string | undefined)[] = [];
  return {
    calls,
    activeExecutable: async (resource?: string) => {
      calls.push(resource);
      return executable;
    },
  };
};

test('tritonlens.interpreter overrides the Python extension', async () => {
  const python = pythonExtension('/usr/bin/python3');
  const got = await resolveInterpreter(['${workspaceFolder}/.venv/bin/python', '-X', 'utf8'], python, {
    workspaceFolder: '/ws',
  });
  assert.deepEqual(got, { command: ['/ws/.venv/bin/python', '-X', 'utf8'], source: 'setting' });
  assert.equal(python.calls.length, 0);
});

test('without the setting, the Python extension interpreter for the workspace is used', async () => {
  const python = pythonExtension('/home/u/miniconda/envs/t/bin/python');
  const got = await resolveInterpreter([], python, { resource: 'file:///ws' });
  assert.deepEqual(got, { command: ['/home/u/miniconda/envs/t/bin/python'], source: 'python-extension' });
  assert.deepEqual(python.calls, ['file:///ws']);
});

test('Python extension without a selected interpreter gives none (the user is asked to pick one)', async () => {
  assert.equal(await resolveInterpreter([], pythonExtension(undefined)), undefined);
});

test('without the Python extension, python3 from PATH (python on Windows)', async () => {
  assert.deepEqual(await resolveInterpreter([], undefined, { platform: 'linux' }), { command: ['python3'], source: 'path' });
  assert.deepEqual(await resolveInterpreter([], undefined, { platform: 'win32' }), { command: ['python'], source: 'path' });
});

test('without the setting or the Python extension, the workspace .venv comes before PATH', async () => {
  const files = new Set(['/ws/.venv/bin/python', '/ws/venv/bin/python']);
  const got = await resolveInterpreter([], undefined, { workspaceFolder: '/ws', platform: 'linux', exists: (f) => files.has(f) });
  assert.deepEqual(got, { command: ['/ws/.venv/bin/python'], source: 'workspace-venv' });
  const onlyVenv = await resolveInterpreter([], undefined, {
    workspaceFolder: '/ws', platform: 'linux', exists: (f) => f === '/ws/venv/bin/python',
  });
  assert.deepEqual(onlyVenv, { command: ['/ws/venv/bin/python'], source: 'workspace-venv' });
  const windows = await resolveInterpreter([], undefined, {
    workspaceFolder: 'C:\\ws', platform: 'win32', exists: (f) => f === 'C:\\ws\\.venv\\Scripts\\python.exe',
  });
  assert.deepEqual(windows, { command: ['C:\\ws\\.venv\\Scripts\\python.exe'], source: 'workspace-venv' });
  const none = await resolveInterpreter([], undefined, { workspaceFolder: '/ws', platform: 'linux', exists: () => false });
  assert.deepEqual(none, { command: ['python3'], source: 'path' });
});

test("the Python extension's choice comes before the workspace venv, which is used when it has none", async () => {
  const exists = (f: string) => f === '/ws/.venv/bin/python';
  const chosen = await resolveInterpreter([], pythonExtension('/opt/conda/bin/python'), { workspaceFolder: '/ws', platform: 'linux', exists });
  assert.deepEqual(chosen, { command: ['/opt/conda/bin/python'], source: 'python-extension' });
  const unset = await resolveInterpreter([], pythonExtension(undefined), { workspaceFolder: '/ws', platform: 'linux', exists });
  assert.deepEqual(unset, { command: ['/ws/.venv/bin/python'], source: 'workspace-venv' });
});

test('a real folder: its .venv is found on disk', async (t) => {
  const fs = await import('node:fs');
  const os = await import('node:os');
  const ws = fs.mkdtempSync(path.join(os.tmpdir(), 'tritonlens-ws-'));
  t.after(() => fs.rmSync(ws, { recursive: true, force: true }));
  const python = process.platform === 'win32' ? path.join(ws, '.venv', 'Scripts', 'python.exe') : path.join(ws, '.venv', 'bin', 'python');
  fs.mkdirSync(path.dirname(python), { recursive: true });
  fs.writeFileSync(python, '');
  assert.deepEqual(await resolveInterpreter([], undefined, { workspaceFolder: ws }), { command: [python], source: 'workspace-venv' });
});

test('variables: ${userHome}, ~ and ${workspaceFolder}', () => {
  const vars = { workspaceFolder: '/ws', userHome: '/home/u' };
  assert.equal(expandVariables('~/venv/bin/python', vars), '/home/u/venv/bin/python');
  assert.equal(expandVariables('${userHome}/x', vars), '/home/u/x');
  assert.equal(expandVariables('${workspaceFolder}/py', vars), '/ws/py');
  assert.equal(expandVariables('python~3', vars), 'python~3');
});

test('server command: <python> [args] -I -m tritonlens serve, outside the workspace', () => {
  assert.deepEqual(serverCommand({ command: ['/opt/py'], source: 'setting' }), {
    command: '/opt/py', args: ['-I', '-m', 'tritonlens', 'serve'], cwd: NEUTRAL_CWD,
  });
  assert.deepEqual(serverCommand({ command: ['conda', 'run', '-n', 't', 'python'], source: 'setting' }).args,
    ['run', '-n', 't', 'python', '-I', '-m', 'tritonlens', 'serve']);
  // a bundled server comes from the folder the command names (PYTHONPATH is ignored under -I)
  const bundled = serverCommand({ command: ['/opt/py'], source: 'setting' }, '/ext/dist/server');
  assert.deepEqual(bundled.args.slice(0, 2), ['-I', '-c']);
  assert.deepEqual(bundled.args.slice(3), ['/ext/dist/server', 'serve']);
  assert.notEqual(NEUTRAL_CWD, '');
});

test('the bundled server goes first on PYTHONPATH, keeping the user one', () => {
  const env = serverEnv('/ext/dist/server', { PYTHONPATH: '/mine', HOME: '/h' });
  assert.equal(env.PYTHONPATH, ['/ext/dist/server', '/mine'].join(path.delimiter));
  assert.equal(env.HOME, '/h');
  assert.equal(serverEnv(undefined, {}).PYTHONPATH, undefined);
});

const py: Interpreter = { command: ['/py'], source: 'python-extension' };
const fakeRunner = (stdout: string, code = 0, stderr = ''): { run: Runner; calls: string[][] } => {
  const calls: string[][] = [];
  return { calls, run: async (command, args) => (calls.push([command, ...args]), { code, stdout, stderr }) };
};

test('probe: everything importable', async () => {
  const { run, calls } = fakeRunner(
    'conda activate noise\n{"found": {"tritonlens": true, "triton": true, "pygls": true, "lsprotocol": true, "watchdog": true}, "origin": "/ext/dist/server/tritonlens/__init__.py", "version": "3.12.3", "executable": "/py"}\n',
  );
  const probe = await probeInterpreter(py, run, {});
  assert.equal(probe.ok, true);
  assert.deepEqual(probe.missing, []);
  assert.equal(probe.pythonVersion, '3.12.3');
  assert.equal(calls[0][0], '/py');
  assert.deepEqual(calls[0].slice(1, 3), ['-I', '-c']);
  assert.deepEqual(calls[0].slice(4), ['', ...SERVER_MODULES.map((m) => m.module)]);
});

test('probe: missing packages are listed and pip installs exactly those', async () => {
  const { run } = fakeRunner(
    '{"found": {"tritonlens": true, "triton": true, "pygls": false, "lsprotocol": false, "watchdog": false}, "origin": null, "version": "3.11.0", "executable": "/py"}',
  );
  const probe = await probeInterpreter(py, run, {});
  assert.equal(probe.ok, false);
  assert.deepEqual(probe.missing, ['pygls', 'lsprotocol', 'watchdog']);
  assert.deepEqual(installCommand(py, probe.missing, true), [
    '/py', '-I', '-m', 'pip', 'install', 'pygls>=2.0,<3', 'lsprotocol>=2025.0.0', 'watchdog>=4',
  ]);
});

test('pip cannot help when tritonlens itself is missing and nothing is bundled', () => {
  assert.equal(installCommand(py, ['tritonlens', 'triton'], false), undefined);
  assert.deepEqual(installCommand(py, ['tritonlens', 'triton'], true), ['/py', '-I', '-m', 'pip', 'install', 'triton>=3.4']);
});

test('probe: an interpreter that cannot run is an error, not a crash', async () => {
  const missing: Runner = async () => {
    throw Object.assign(new Error('spawn /nope ENOENT'), { code: 'ENOENT' });
  };
  assert.match((await probeInterpreter(py, missing, {})).error ?? '', /ENOENT/);
  const crash = fakeRunner('', 1, 'Traceback: boom');
  assert.equal((await probeInterpreter(py, crash.run, {})).error, 'Traceback: boom');
  const garbage = fakeRunner('hello');
  assert.match((await probeInterpreter(py, garbage.run, {})).error ?? '', /unexpected output/);
});

test('requirements written at package time are what pip gets', () => {
  const reqs = parseRequirements('triton>=3.4\npygls>=2.0,<3\n# comment\n\nlsprotocol>=2025.0.0\nwatchdog>=4\n');
  assert.deepEqual(reqs.map((r) => r.module), ['triton', 'pygls', 'lsprotocol', 'watchdog']);
  assert.equal(reqs[1].requirement, 'pygls>=2.0,<3');
  assert.deepEqual(parseRequirements(undefined), [...SERVER_MODULES]);
});

const realRunner: Runner = (command, args, env) =>
  new Promise((resolve, reject) =>
    cp.execFile(command, args, { env }, (err, stdout, stderr) =>
      err && typeof (err as NodeJS.ErrnoException).code === 'string'
        ? reject(err)
        : resolve({ code: err ? 1 : 0, stdout, stderr }),
    ),
  );

const python3 = (() => {
  try {
    return execFileSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' }).trim();
  } catch {
    return undefined;
  }
})();

test('probe with a real Python: the bundled server folder makes tritonlens importable', { skip: !python3 && 'no python3' }, async () => {
  const interpreter: Interpreter = { command: [python3!], source: 'setting' };
  const serverDir = path.join(__dirname, '..', '..', 'server');
  const withServer = await probeInterpreter(interpreter, realRunner, serverEnv(serverDir, { PATH: process.env.PATH }), ['json', 'no_such_module_xyz'], serverDir);
  assert.equal(withServer.error, undefined);
  assert.deepEqual(withServer.missing, ['no_such_module_xyz']);
  assert.match(withServer.tritonlensOrigin ?? '', /server[\\/]tritonlens[\\/]__init__\.py$/);
});
