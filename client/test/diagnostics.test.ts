import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import { compactRelatedInformation } from '../src/diagnostics';

test('a diagnostic keeps its first related IR line, saying how many there were', () => {
  // PTX001 on `x = tl.load(...)` of examples/bad/vector_add_unaligned.py: eight ld.global.b32 lines.
  const loads = [73, 77, 81, 85, 89, 93, 97, 101].map((line) => ({
    location: { uri: 'file:///cache/add_kernel.ptx', line },
    message: 'ld.global.b32 (32-bit)',
  }));
  const one = { location: { uri: 'file:///cache/k.nvsass', line: 9 }, message: 'STL [R1+0x4]' };
  const diags = [
    { code: 'PTX001', relatedInformation: loads },
    { code: 'SASS001', relatedInformation: [one] },
    { code: 'SRC002' },
  ];
  const out = compactRelatedInformation(diags);
  assert.deepEqual(out[0].relatedInformation, [
    { location: { uri: 'file:///cache/add_kernel.ptx', line: 73 }, message: 'ld.global.b32 (32-bit) (first of 8 IR lines)' },
  ]);
  assert.deepEqual(out[1].relatedInformation, [one]);
  assert.equal(out[2].relatedInformation, undefined);
  assert.deepEqual(out.map((d) => d.code), ['PTX001', 'SASS001', 'SRC002']);
});

test('a diagnostic keeps every source line it names and the first of its IR lines', () => {
  // SASS001 on the def line: three spilling source lines, each with its first STL in the SASS.
  const source = [92, 89, 93].map((line) => ({
    location: { uri: 'file:///ws/group_norm.py', line },
    message: `spill code from this line (line ${line})`,
  }));
  const sass = [40, 52, 61].map((line) => ({ location: { uri: 'file:///cache/k.nvsass', line }, message: 'STL' }));
  const mixed = [source[0], sass[0], source[1], sass[1], source[2], sass[2]];
  const [out] = compactRelatedInformation([{ code: 'SASS001', relatedInformation: mixed }]);
  assert.deepEqual(out.relatedInformation, [
    source[0],
    { location: { uri: 'file:///cache/k.nvsass', line: 40 }, message: 'STL (first of 3 IR lines)' },
    source[1],
    source[2],
  ]);
});

