// The client's half of the server contract (test/contract/lsp.json): the messages this code builds must be exactly
// the ones in the fixture, which tests/test_lsp_contract.py sends to a real server.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as manifest from '../../package.json';
import * as contract from '../../test/contract/lsp.json';
import {
  cursorIrRequest,
  followIrRequest,
  IR_DOCUMENT_REQUEST,
  IrAnswer,
  IrDocumentProvider,
  IrRequest,
  IrResult,
  irUri,
  parseShowIrArgs,
  showIrCommandLink,
} from '../src/irDocuments';
import { executeCommandParams, SERVER_COMMANDS, TRUSTED_COMMANDS } from '../src/protocol';
import { didChangeConfigurationParams, initializationOptions, readSettings } from '../src/settings';
import { parseStatus, STATUS_NOTIFICATION } from '../src/status';
import { parseUri } from '../src/vscodeapi';

const URI = 'file:///home/user/kernels/vector%20add.py';

/** The fixture with `${uri}` filled in (the Python side fills in its temporary file's URI). */
function fill<T>(value: T): T {
  return JSON.parse(JSON.stringify(value).split('${uri}').join(URI)) as T;
}

const c = fill(contract);

test('contract: method names', () => {
  assert.equal(IR_DOCUMENT_REQUEST, 'tritonlens/irDocument');
  assert.equal(STATUS_NOTIFICATION, 'tritonlens/status');
  assert.deepEqual(SERVER_COMMANDS, ['tritonlens.recompile', 'tritonlens.profileKernel', 'tritonlens.benchKernel']);
  const declared = manifest.contributes.commands.map((cmd) => cmd.command);
  for (const command of TRUSTED_COMMANDS) {
    assert.ok(declared.includes(command), `${command} is not declared in package.json`);
  }
});

test('contract: initializationOptions and didChangeConfiguration are the fixture', () => {
  const settings = readSettings((key) => (c.settings as Record<string, unknown>)[key]);
  assert.deepEqual(initializationOptions(settings), c.initializationOptions);
  const hip = readSettings((key) => (c.didChangeConfigurationToHip.settings.tritonlens as Record<string, unknown>)[key]);
  assert.deepEqual(didChangeConfigurationParams(hip), c.didChangeConfigurationToHip);
});

test('contract: a lens showIr command becomes the fixture irDocument request', () => {
  const ptx = c.codeLensShowIr.find((lens) => lens.title === 'Show PTX')!;
  // VS Code calls our command with the lens's arguments spread; the handler receives them as an array.
  assert.deepEqual(parseShowIrArgs(ptx.arguments), c.irDocumentRequests.fromLens);
  for (const lens of c.codeLensShowIr) {
    assert.ok(TRUSTED_COMMANDS.includes(lens.command));
    assert.ok(parseShowIrArgs(lens.arguments), lens.title);
  }
});

test('contract: hover command links parse as the server writes them', () => {
  for (const args of c.hoverShowIrArguments) {
    const request = parseShowIrArgs(args) as IrRequest;
    assert.deepEqual(request, args[0]);
    const link = showIrCommandLink(request);
    assert.deepEqual(JSON.parse(decodeURIComponent(link.split('?')[1])), args);
  }
});

test('contract: cursor command, cursor follow and restored tab send the fixture requests', async () => {
  assert.deepEqual(cursorIrRequest(URI, 'ptx', c.loadLine), c.irDocumentRequests.fromCursorCommand);
  const key = { uri: URI, kernel: c.kernel, stage: 'ptx' as const };
  assert.deepEqual(followIrRequest(key, c.loadLine + 1), c.irDocumentRequests.followCursor);

  const sent: IrRequest[] = [];
  const answer: IrResult = {
    text: 'module {}', languageId: 'ttgir', path: '/cache/add_kernel.ttgir', ranges: [], kernel: c.kernel,
    spec: 'cuda:90, num_warps=4', target: 'cuda:90', hash: '5d41402abc4b2a76b9719d911017c592',
  };
  assert.deepEqual(Object.keys(answer).sort(), c.irDocumentResultKeys);
  const provider = new IrDocumentProvider(async (params) => {
    sent.push(params);
    return answer;
  });
  const restored = parseUri(irUri({ uri: URI, kernel: c.kernel, stage: 'ttgir' }));
  assert.equal(await provider.provideTextDocumentContent(restored), 'module {}');
  assert.deepEqual(sent, [c.irDocumentRequests.restoredTab]);
});

test('contract: cursor follow names the held text, and an unchanged answer only moves the ranges', async () => {
  const path = '/cache/add_kernel.ptx';
  const hash = '9e107d9d372bb6826bd81d3542a419d6';
  const f = JSON.parse(JSON.stringify(c.irDocumentFollowUp).split('${path}').join(path).split('${hash}').join(hash));
  const text = Array.from({ length: 50 }, (_, i) => `ptx line ${i}`).join('\n');
  const full: IrResult = {
    text, languageId: 'ptx', path, hash, ranges: [{ start: 10, end: 12 }], kernel: c.kernel,
    spec: 'x_ptr=*fp32, BLOCK_SIZE=1024, num_warps=4', target: 'cuda:90',
  };
  const answers: IrAnswer[] = [full, f.unchangedExample];
  const sent: IrRequest[] = [];
  const provider = new IrDocumentProvider(async (params) => {
    sent.push(params);
    return answers.shift()!;
  });
  const changed: string[] = [];
  provider.onDidChange((uri) => changed.push(uri.path));

  const first = await provider.fetch(f.held as IrRequest);
  assert.ok(first);
  assert.deepEqual(sent, [f.held], 'nothing held yet: the old request shape, no have');
  const request = followIrRequest(first.key, f.followCursor.line, provider.get(first.key));
  assert.deepEqual(request, f.followCursor);

  assert.deepEqual(Object.keys(f.unchangedExample).sort(), f.unchangedKeys);
  const next = await provider.fetch(request);
  assert.ok(next);
  assert.deepEqual(sent[1], f.followCursor);
  assert.equal(next.changed, false);
  assert.equal(next.result.text, text, 'the text is the one held');
  assert.deepEqual(next.result.ranges, f.unchangedExample.ranges);
  assert.equal(next.lineCount, 50);
  assert.deepEqual(changed, [], 'an unchanged answer does not reload the document');
  assert.equal(await provider.provideTextDocumentContent(parseUri(next.uri)), text);
});

test('contract: a null irDocument result (stage the target does not make) shows no document', async () => {
  const provider = new IrDocumentProvider(async () => null);
  assert.equal(await provider.fetch(c.irDocumentNullRequests.stageTheTargetDoesNotMake as IrRequest), undefined);
});

test('contract: server commands are forwarded with their arguments unchanged', () => {
  const recompile = c.executeCommand.recompileFromPalette;
  assert.deepEqual(executeCommandParams(recompile.command, []), recompile);
  const one = c.executeCommand.recompileOneFile;
  assert.deepEqual(executeCommandParams(one.command, [URI]), one);
  const profile = c.executeCommand.profileKernelFromLens;
  assert.deepEqual(executeCommandParams(profile.command, profile.arguments), profile);
});

test('contract: the status notification the server sends parses unchanged', () => {
  assert.deepEqual(parseStatus(c.statusExample), c.statusExample);
  assert.deepEqual(Object.keys(c.statusExample).sort(), c.statusKeys);
  for (const state of c.statusStates) {
    assert.ok(parseStatus({ ...c.statusExample, state }));
  }
});
