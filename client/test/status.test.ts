import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { parseStatus, statusView } from '../src/status';

test('status bar: target, compiling, error and warning counts', () => {
  const idle = parseStatus({ state: 'idle', target: 'cuda:90', errors: 1, warnings: 2, message: '3 kernels' });
  assert.equal(statusView('running', 'auto', idle).text, '$(check) Triton cuda:90 $(error) 1 $(warning) 2');
  assert.match(statusView('running', 'auto', idle).tooltip, /3 kernels/);
  const busy = parseStatus({ state: 'compiling', target: 'hip:gfx942', errors: 0, warnings: 0, message: '' });
  assert.equal(statusView('running', 'auto', busy).text, '$(sync~spin) Triton hip:gfx942: compiling…');
  assert.equal(statusView('running', 'cuda:80', undefined).text, '$(check) Triton cuda:80');
});

test('status bar without a running server', () => {
  assert.match(statusView('untrusted', 'auto', undefined).tooltip, /trusted/);
  assert.match(statusView('failed', 'auto', undefined).text, /error/);
  assert.equal(parseStatus({ state: 'weird' }), undefined);
  assert.deepEqual(parseStatus({ state: 'idle' }), { state: 'idle', target: '', errors: 0, warnings: 0, message: '' });
});
