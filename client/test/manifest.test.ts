import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as manifest from '../../package.json';

const root = path.join(__dirname, '..', '..');

test('manifest: entry point, activation on Python, engines, icon', () => {
  assert.equal(manifest.main, './dist/extension.js');
  assert.ok(manifest.activationEvents.includes('onLanguage:python'));
  assert.match(manifest.engines.vscode, /^\^1\.\d+\.0$/);
  assert.ok(manifest.publisher);
  assert.ok(fs.existsSync(path.join(root, manifest.icon)));
});

test('manifest: limited support in untrusted workspaces', () => {
  assert.equal(manifest.capabilities.untrustedWorkspaces.supported, 'limited');
  assert.ok(manifest.capabilities.untrustedWorkspaces.description.length > 0);
});

test('grammars: files exist, scope names are unique and none is CSS Sass', () => {
  const scopes = manifest.contributes.grammars.map((g) => g.scopeName);
  assert.equal(new Set(scopes).size, scopes.length);
  assert.ok(!scopes.includes('source.sass'));
  for (const g of manifest.contributes.grammars) {
    const grammar = JSON.parse(fs.readFileSync(path.join(root, g.path), 'utf8'));
    assert.equal(grammar.scopeName, g.scopeName, g.path);
  }
});

test('every contributed command is registered by the client', () => {
  const src = fs.readdirSync(path.join(root, 'client', 'src'))
    .map((f) => fs.readFileSync(path.join(root, 'client', 'src', f), 'utf8'))
    .join('\n');
  for (const { command } of manifest.contributes.commands) {
    assert.ok(src.includes(`'${command}'`), `${command} has no registration`);
  }
  for (const stage of ['Ttir', 'Ttgir', 'Llir', 'Ptx', 'Sass', 'Amdgcn']) {
    assert.ok(manifest.contributes.commands.some((c) => c.command === `tritonlens.show${stage}`), stage);
  }
});
