// The "compare with another release" command without VS Code: what it asks, what it sends, what it shows.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as manifest from '../../package.json';
import {
  COMPARE_COMMAND,
  CompareArgs,
  CompareDeps,
  compareWithRelease,
  OTHER_PYTHON,
  OTHER_VERSION,
  parseCompareArgs,
} from '../src/compare';

const URI = 'file:///home/user/kernels/matmul.py';

function deps(picks: (string | undefined)[], answers: (string | undefined)[] = []) {
  const sent: CompareArgs[] = [];
  const shown: string[] = [];
  const told: string[] = [];
  const d: CompareDeps = {
    activeUri: () => URI,
    pick: async () => picks.shift(),
    ask: async () => answers.shift(),
    run: async (args) => {
      sent.push(args);
      return { text: `report vs ${args.release ?? args.python}`, gated: 1 };
    },
    show: async (text) => {
      shown.push(text);
    },
    info: (m) => told.push(m),
  };
  return { d, sent, shown, told };
}

test('compare: the command is declared', () => {
  assert.ok(manifest.contributes.commands.some((c) => c.command === COMPARE_COMMAND));
});

test('compare: from the palette, a picked release is sent with the active document and the report shown', async () => {
  const { d, sent, shown } = deps(['3.7.1']);
  await compareWithRelease([], d);
  assert.deepEqual(sent, [{ uri: URI, release: '3.7.1' }]);
  assert.deepEqual(shown, ['report vs 3.7.1']);
});

test('compare: another version or an interpreter can be typed; a bad version is refused', async () => {
  const typed = deps([OTHER_VERSION], ['3.8.0']);
  await compareWithRelease([], typed.d);
  assert.deepEqual(typed.sent, [{ uri: URI, release: '3.8.0' }]);
  const python = deps([OTHER_PYTHON], ['/opt/tri/bin/python']);
  await compareWithRelease([], python.d);
  assert.deepEqual(python.sent, [{ uri: URI, python: '/opt/tri/bin/python' }]);
  const bad = deps([OTHER_VERSION], ['latest']);
  await compareWithRelease([], bad.d);
  assert.deepEqual(bad.sent, []);
  assert.match(bad.told[0], /not a Triton release number/);
});

test("compare: the lens's arguments run it again without asking", async () => {
  const { d, sent } = deps([]);
  assert.deepEqual(parseCompareArgs([{ uri: URI, release: '3.9.0' }]), { uri: URI, release: '3.9.0' });
  await compareWithRelease([{ uri: URI, release: '3.9.0' }], d);
  assert.deepEqual(sent, [{ uri: URI, release: '3.9.0' }]);
  assert.equal(parseCompareArgs([{ uri: URI }]), undefined);
});
