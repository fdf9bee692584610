import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as manifest from '../../package.json';
import {
  DEFAULT_SETTINGS,
  didChangeConfigurationParams,
  initializationOptions,
  KNOWN_TARGETS,
  readSettings,
  SETTING_KEYS,
  SettingProblem,
} from '../src/settings';

const EXPECTED_KEYS = [
  'target', 'extraTargets', 'compileOn', 'compileTimeout', 'maxWorkers',
  'moduleExecution', 'stormThreshold', 'rules', 'interpreter',
  'allCaptures', 'maxCapturedSpecs', 'compileMemoryMB', 'maskedLaneThreshold', 'gridFillThreshold', 'smCount',
  'gpu', 'env', 'severityFromCost', 'autoCapture', 'autoCaptureTimeout',
];

const fromObject = (values: Record<string, unknown>) => (key: string) => values[key];

test('initializationOptions has exactly the documented keys, camelCase, with defaults', () => {
  const options = initializationOptions(readSettings(fromObject({})));
  assert.deepEqual(Object.keys(options).sort(), [...EXPECTED_KEYS].sort());
  assert.deepEqual(options, {
    target: 'auto', extraTargets: [], compileOn: 'save', compileTimeout: 60, maxWorkers: 0,
    moduleExecution: 'definitions', stormThreshold: 3, rules: {}, interpreter: [],
    allCaptures: false, maxCapturedSpecs: 12, compileMemoryMB: 8192, maskedLaneThreshold: 0.25,
    gridFillThreshold: 0.75, smCount: 0, gpu: '', env: {}, severityFromCost: true, autoCapture: true,
    autoCaptureTimeout: 20,
  });
});

test('user values are passed through', () => {
  const values = {
    target: 'hip:gfx942', extraTargets: ['cuda:80', 'cuda:120'], compileOn: 'change', compileTimeout: 15,
    maxWorkers: 4, moduleExecution: 'full', stormThreshold: 5, rules: { RES002: 'off', PTX001: 'error' },
    interpreter: ['/opt/venv/bin/python'], allCaptures: true, maxCapturedSpecs: 4, compileMemoryMB: 0,
    maskedLaneThreshold: 0.5, gridFillThreshold: 0.9, smCount: 114, gpu: 'h200', env: { MYLIB_DEVICE: 'cuda' },
    severityFromCost: false, autoCapture: false, autoCaptureTimeout: 45,
  };
  assert.deepEqual(initializationOptions(readSettings(fromObject(values))), values);
});

test('bad values fall back to defaults and are reported, never thrown', () => {
  const problems: SettingProblem[] = [];
  const settings = readSettings(
    fromObject({
      target: 'sm_90', extraTargets: 'cuda:80', compileOn: 'always', compileTimeout: -1, maxWorkers: 1.5,
      moduleExecution: 'some', stormThreshold: 0, rules: { PTX001: 'loud', SASS001: 'hint' }, interpreter: [''],
      allCaptures: 'yes', maskedLaneThreshold: 2,
    }),
    problems,
  );
  assert.deepEqual(initializationOptions(settings), { ...DEFAULT_SETTINGS, rules: { SASS001: 'hint' } });
  assert.deepEqual(problems.map((p) => p.key).sort(), [
    'tritonlens.allCaptures', 'tritonlens.compileOn', 'tritonlens.compileTimeout', 'tritonlens.extraTargets',
    'tritonlens.interpreter', 'tritonlens.maskedLaneThreshold', 'tritonlens.maxWorkers', 'tritonlens.moduleExecution',
    'tritonlens.rules.PTX001', 'tritonlens.stormThreshold', 'tritonlens.target',
  ]);
});

test('settings are copies: editing them does not change the defaults', () => {
  const settings = readSettings(fromObject({}));
  settings.extraTargets.push('cuda:80');
  settings.rules.X = 'off';
  assert.deepEqual(DEFAULT_SETTINGS.extraTargets, []);
  assert.deepEqual(DEFAULT_SETTINGS.rules, {});
});

test('didChangeConfiguration carries {settings: {tritonlens: {...}}}', () => {
  const params = didChangeConfigurationParams(readSettings(fromObject({ target: 'cuda:80' })));
  assert.deepEqual(Object.keys(params), ['settings']);
  assert.deepEqual(Object.keys(params.settings), ['tritonlens']);
  assert.equal(params.settings.tritonlens.target, 'cuda:80');
  assert.deepEqual(Object.keys(params.settings.tritonlens).sort(), [...EXPECTED_KEYS].sort());
});

test('package.json declares every setting with the same default, plus the client-only ones', () => {
  const properties = manifest.contributes.configuration.properties as Record<string, { default: unknown; enum?: string[] }>;
  for (const key of SETTING_KEYS) {
    const declared = properties[`tritonlens.${key}`];
    assert.ok(declared, `tritonlens.${key} is not in package.json`);
    assert.deepEqual(declared.default, DEFAULT_SETTINGS[key], `default of tritonlens.${key}`);
  }
  assert.deepEqual(properties['tritonlens.compileOn'].enum, ['save', 'change']);
  assert.deepEqual(properties['tritonlens.moduleExecution'].enum, ['definitions', 'full']);
  assert.deepEqual(properties['tritonlens.trace.server'].enum, ['off', 'messages', 'verbose']);
  assert.deepEqual(properties['tritonlens.target'].enum, KNOWN_TARGETS.map((t) => t.target));
  assert.deepEqual(
    Object.keys(properties).sort(),
    [...SETTING_KEYS.map((k) => `tritonlens.${k}`), 'tritonlens.trace.server', 'tritonlens.captureCommand'].sort(),
  );
  // The capture command is the client's (it runs it), never sent to the server, and never from untrusted settings.
  assert.equal(properties['tritonlens.captureCommand'].default, '');
  assert.ok(manifest.capabilities.untrustedWorkspaces.restrictedConfigurations.includes('tritonlens.captureCommand'));
});

test('object and array values handed out as Proxies (as VS Code does) are read, not refused', () => {
  // VS Code's WorkspaceConfiguration.get returns object values wrapped in a Proxy; structuredClone throws on them.
  const proxied = (v: object) => new Proxy(v, {});
  const values: Record<string, unknown> = {
    rules: proxied({ RES002: 'off' }),
    interpreter: proxied(['/opt/venv/bin/python']),
    extraTargets: proxied(['cuda:80']),
  };
  const settings = readSettings((key) => values[key]);
  assert.deepEqual(settings.rules, { RES002: 'off' });
  assert.deepEqual(settings.interpreter, ['/opt/venv/bin/python']);
  assert.deepEqual(settings.extraTargets, ['cuda:80']);
});
