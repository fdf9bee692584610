import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as manifest from '../../package.json';
import {
  countLines,
  IR_SCHEME,
  followIrRequest,
  IrAnswer,
  IrDocumentProvider,
  IrRequest,
  IrResult,
  irLogLine,
  irUri,
  languageForStage,
  lineRanges,
  parseIrQuery,
  parseShowIrArgs,
  showIrCommandLink,
  STAGES,
} from '../src/irDocuments';
import { parseUri } from '../src/vscodeapi';

const SOURCE = 'file:///home/user/kernels/vector%20add.py';
// Real TTGIR of vector_add.py (cuda:90), shortened; line 7 is tl.load of x on source line 13.
const TTGIR = [
  '#blocked = #ttg.blocked<{sizePerThread = [4], threadsPerWarp = [32], warpsPerCTA = [4], order = [0]}>',
  'module attributes {"ttg.num-warps" = 4 : i32, ttg.target = "cuda:90"} {',
  '  tt.func public @add_kernel(%x_ptr: !tt.ptr<f32> {tt.divisibility = 16 : i32}) {',
  '    %pid = tt.get_program_id x : i32 loc(#loc19)',
  '    %x = tt.splat %x_ptr : !tt.ptr<f32> -> tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc24)',
  '    %x_4 = tt.addptr %x, %offsets_2 : tensor<1024x!tt.ptr<f32>, #blocked>, tensor<1024xi32, #blocked> loc(#loc24)',
  '    %x_5 = tt.load %x_4, %mask_3 : tensor<1024x!tt.ptr<f32>, #blocked> loc(#loc25)',
  '  } loc(#loc)',
  '} loc(#loc)',
].join('\n');

const result = (over: Partial<IrResult> = {}): IrResult => ({
  text: TTGIR, languageId: 'ttgir', path: '/cache/add_kernel.ttgir', ranges: [{ start: 4, end: 6 }],
  kernel: 'add_kernel', spec: 'x_ptr=*fp32, BLOCK_SIZE=1024, num_warps=4', target: 'cuda:90', ...over,
});

function fakeServer(answers: (IrAnswer | null)[]) {
  const requests: IrRequest[] = [];
  const send = async (params: IrRequest) => {
    requests.push(params);
    return answers.length > 1 ? answers.shift()! : answers[0];
  };
  return { requests, send };
}

test('IR URI: own scheme, readable title, key survives VS Code parsing', () => {
  const key = { uri: SOURCE, kernel: 'add_kernel', stage: 'ttgir' as const };
  const uri = parseUri(irUri(key));
  assert.equal(uri.scheme, IR_SCHEME);
  assert.equal(uri.path, '/vector add.py/add_kernel.ttgir');
  assert.deepEqual(parseIrQuery(uri.query), key);
  assert.equal(parseIrQuery('{"uri": 1}'), undefined);
  assert.equal(parseIrQuery('not json'), undefined);
  assert.equal(parseUri(irUri({ ...key, stage: 'sass' })).path, '/vector add.py/add_kernel.nvsass');
});

test('provider: URI → the text the server sent; the cursor line is in the request', async () => {
  const server = fakeServer([result()]);
  const provider = new IrDocumentProvider(server.send);
  const request: IrRequest = { uri: SOURCE, kernel: null, stage: 'ttgir', line: 12 };
  const fetched = await provider.fetch(request);
  assert.ok(fetched);
  assert.deepEqual(server.requests, [request]);
  assert.equal(fetched.key.kernel, 'add_kernel', 'kernel: null is resolved by the server');
  const text = await provider.provideTextDocumentContent(parseUri(fetched.uri));
  assert.equal(text, TTGIR);
  assert.equal(server.requests.length, 1, 'the text is served from what show fetched');
  assert.deepEqual(lineRanges(fetched.result.ranges, countLines(text)), [{ start: 4, end: 6 }]);
});

test('provider: a restored tab asks the server for the whole kernel', async () => {
  const server = fakeServer([result({ ranges: [] })]);
  const provider = new IrDocumentProvider(server.send);
  const uri = parseUri(irUri({ uri: SOURCE, kernel: 'add_kernel', stage: 'ptx' }));
  assert.equal(await provider.provideTextDocumentContent(uri), TTGIR);
  assert.deepEqual(server.requests, [{ uri: SOURCE, kernel: 'add_kernel', stage: 'ptx', line: null }]);
});

test('provider: nothing compiled yet gives a placeholder, not an error', async () => {
  const provider = new IrDocumentProvider(fakeServer([null]).send);
  assert.equal(await provider.fetch({ uri: SOURCE, kernel: 'k', stage: 'sass', line: 3 }), undefined);
  const text = await provider.provideTextDocumentContent(parseUri(irUri({ uri: SOURCE, kernel: 'k', stage: 'sass' })));
  assert.match(text, /has not been compiled yet/);
});

test('provider: a recompile that changes the text fires onDidChange for that URI, keeping the line', async () => {
  const server = fakeServer([result(), result({ text: TTGIR + '\n// v2' }), result({ text: TTGIR + '\n// v2' })]);
  const provider = new IrDocumentProvider(server.send);
  const changed: string[] = [];
  provider.onDidChange((uri) => changed.push(uri.path));
  await provider.fetch({ uri: SOURCE, kernel: 'add_kernel', stage: 'ttgir', line: 12 });
  await provider.refreshAll();
  await provider.refreshAll();
  assert.deepEqual(changed, ['/vector add.py/add_kernel.ttgir'], 'fires once: the second refresh changed nothing');
  assert.deepEqual(server.requests.map((r) => r.line), [12, 12, 12]);
});

const unchanged = (hash: string, over: Partial<IrResult> = {}): IrAnswer => {
  const { text: _text, ...rest } = result({ hash, ...over });
  return { ...rest, unchanged: true };
};

test('provider: a server without hashes never gets have (the old request shape)', async () => {
  const server = fakeServer([result()]);
  const provider = new IrDocumentProvider(server.send);
  const key = { uri: SOURCE, kernel: 'add_kernel', stage: 'ttgir' as const };
  await provider.fetch({ ...key, line: 12 });
  await provider.fetch(followIrRequest(key, 13, provider.get(key)));
  await provider.refreshAll();
  assert.ok(server.requests.every((r) => !('have' in r)), JSON.stringify(server.requests));
});

test('provider: refresh after a recompile names the held text; unchanged keeps it, a new hash replaces it', async () => {
  const server = fakeServer([
    result({ hash: 'h1' }),
    unchanged('h1', { ranges: [{ start: 1, end: 1 }] }),
    result({ hash: 'h2', text: TTGIR + '\n// v2' }),
  ]);
  const provider = new IrDocumentProvider(server.send);
  const changed: string[] = [];
  provider.onDidChange((uri) => changed.push(uri.path));
  const key = { uri: SOURCE, kernel: 'add_kernel', stage: 'ttgir' as const };
  await provider.fetch({ ...key, line: 12 });
  await provider.refreshAll();
  assert.deepEqual(server.requests[1].have, { path: '/cache/add_kernel.ttgir', hash: 'h1' });
  assert.equal(provider.get(key)?.text, TTGIR);
  assert.deepEqual(provider.get(key)?.ranges, [{ start: 1, end: 1 }]);
  assert.equal(provider.lineCount(key), 9);
  assert.deepEqual(changed, []);
  await provider.refreshAll();
  assert.deepEqual(server.requests[2].have, { path: '/cache/add_kernel.ttgir', hash: 'h1' });
  assert.equal(provider.get(key)?.text, TTGIR + '\n// v2');
  assert.equal(provider.get(key)?.hash, 'h2');
  assert.equal(provider.lineCount(key), 10);
  assert.deepEqual(changed, ['/vector add.py/add_kernel.ttgir']);
});

test('provider: an unchanged answer for text no longer held asks again without have', async () => {
  const server = fakeServer([result({ hash: 'h1' }), unchanged('h0'), result({ hash: 'h0', text: 'other' })]);
  const provider = new IrDocumentProvider(server.send);
  const key = { uri: SOURCE, kernel: 'add_kernel', stage: 'ttgir' as const };
  await provider.fetch({ ...key, line: 12 });
  const fetched = await provider.fetch({ ...key, line: 13, have: { path: '/cache/add_kernel.ttgir', hash: 'h0' } });
  assert.equal(fetched?.result.text, 'other');
  assert.equal(fetched?.changed, true);
  assert.deepEqual(server.requests.map((r) => r.have?.hash), [undefined, 'h0', undefined]);
});

test('line ranges: clamped to the document, sorted, merged, bad ones dropped', () => {
  assert.deepEqual(
    lineRanges([{ start: 8, end: 20 }, { start: 0, end: 1 }, { start: 2, end: 3 }, { start: 5, end: 4 }, { start: 6, end: 6 }], 10),
    [{ start: 0, end: 3 }, { start: 6, end: 6 }, { start: 8, end: 9 }],
  );
  assert.deepEqual(lineRanges([{ start: 7, end: 7 }, { start: 6, end: 6 }], 10), [{ start: 6, end: 7 }]);
  assert.deepEqual(lineRanges([{ start: 40, end: 50 }], 10), []);
  assert.deepEqual(lineRanges(undefined, 10), []);
  assert.deepEqual(lineRanges([{ start: 1.5, end: 2 } as never], 10), []);
  assert.equal(countLines(TTGIR), 9);
});

test('hover links: command:tritonlens.showIr?<urlencoded JSON array> round-trips to the request', () => {
  const args = { uri: SOURCE, kernel: 'add_kernel', stage: 'ptx' as const, line: 12 };
  const link = showIrCommandLink(args);
  assert.ok(link.startsWith('command:tritonlens.showIr?%5B%7B'));
  // VS Code decodes the query, JSON-parses it and spreads the array into the command's arguments.
  const decoded = JSON.parse(decodeURIComponent(link.slice(link.indexOf('?') + 1))) as unknown[];
  assert.deepEqual(parseShowIrArgs(decoded), args);
  assert.deepEqual(parseShowIrArgs(decoded[0]), args);
  assert.deepEqual(parseShowIrArgs([{ uri: SOURCE, stage: 'sass' }]), { uri: SOURCE, kernel: null, stage: 'sass', line: null });
  assert.equal(parseShowIrArgs([{ uri: SOURCE, stage: 'hsaco' }]), undefined);
  assert.equal(parseShowIrArgs(undefined), undefined);
});

test('every stage opens in a language the manifest declares, with a grammar', () => {
  const languages = new Set(manifest.contributes.languages.map((l) => l.id));
  const grammars = new Set(manifest.contributes.grammars.map((g) => (g as { language?: string }).language));
  for (const stage of STAGES) {
    assert.ok(languages.has(languageForStage(stage)), stage);
    assert.ok(grammars.has(languageForStage(stage)), stage);
  }
});

test('the IR log line names the target once', () => {
  // What the server sends: the spec description starts with the target.
  assert.equal(
    irLogLine('add_kernel', 'ptx', { target: 'cuda:90', spec: 'cuda:90, num_warps=4, num_stages=3, BLOCK_SIZE=1024' }),
    'add_kernel ptx [cuda:90, num_warps=4, num_stages=3, BLOCK_SIZE=1024]',
  );
  assert.equal(irLogLine('k', 'sass', { target: 'cuda:80', spec: 'num_warps=8' }), 'k sass [cuda:80, num_warps=8]');
  assert.equal(irLogLine('k', 'ttgir', { target: 'hip:gfx942', spec: '' }), 'k ttgir [hip:gfx942]');
});
