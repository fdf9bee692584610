// "Show where the time goes" without VS Code: which file it asks for, what it shows, and which pages it refuses.
import { test } from 'node:test';
import * as assert from 'node:assert/strict';
import * as manifest from '../../package.json';
import { parseTimeArgs, showTimeReport, strictPage, TIME_COMMAND, TimeAnswer, TimeReportDeps } from '../src/timeReport';

const URI = 'file:///home/user/kernels/matmul.py';
// the head `tritonlens report` writes (report/html.py)
const PAGE =
  '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n' +
  '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; style-src \'unsafe-inline\'; ' +
  "script-src 'sha256-q1Ww6VXG1t2tGJ7m0u8oN4F9m0Jc0ePpWQ5f3h3k1yA='; img-src data:; base-uri 'none'; " +
  'form-action \'none\'">\n<title>where the time goes — matmul.py</title></head><body><section id="time"></section>' +
  '</body></html>';

function deps(answer: TimeAnswer | null | undefined, active: string | null = URI) {
  const asked: string[] = [];
  const shown: [string, string][] = [];
  const told: string[] = [];
  const d: TimeReportDeps = {
    activeUri: () => active ?? undefined,
    request: async (uri) => {
      asked.push(uri);
      return answer;
    },
    show: (html, title) => {
      shown.push([html, title]);
    },
    info: (m) => told.push(m),
  };
  return { d, asked, shown, told };
}

test('time report: the command is declared and offered in Python files', () => {
  assert.ok(manifest.contributes.commands.some((c) => c.command === TIME_COMMAND && /where the time goes/.test(c.title)));
  assert.ok(manifest.contributes.menus.commandPalette.some((c) => c.command === TIME_COMMAND && c.when === 'editorLangId == python'));
});

test('time report: from the palette, the active file is asked for and its page shown with its title', async () => {
  const { d, asked, shown } = deps({ html: PAGE, title: 'where the time goes — matmul.py' });
  await showTimeReport([], d);
  assert.deepEqual(asked, [URI]);
  assert.deepEqual(shown, [[PAGE, 'where the time goes — matmul.py']]);
});

test("time report: the lens's URI wins over the active editor", async () => {
  const other = 'file:///home/user/kernels/norm.py';
  assert.equal(parseTimeArgs([other]), other);
  assert.equal(parseTimeArgs([[other]]), other);
  assert.equal(parseTimeArgs([{ uri: other }, 3]), undefined);
  const { d, asked } = deps({ html: PAGE, title: 't' });
  await showTimeReport([other], d);
  assert.deepEqual(asked, [other]);
});

test('time report: no file, no answer: nothing shown, the user told why', async () => {
  const none = deps({ html: PAGE, title: 't' }, null);
  await showTimeReport([], none.d);
  assert.deepEqual(none.asked, []);
  assert.match(none.told[0], /open a Python file/);
  const empty = deps(null);
  await showTimeReport([], empty.d);
  assert.deepEqual(empty.shown, []);
  assert.match(empty.told[0], /nothing compiled/);
});

test('time report: only a page whose own policy loads nothing and runs only hashed scripts reaches the webview', async () => {
  assert.equal(strictPage(PAGE), PAGE);
  assert.equal(strictPage('<html><body>no policy</body></html>'), undefined);
  assert.equal(strictPage(PAGE.replace("script-src 'sha256-", "script-src 'unsafe-inline' 'sha256-")), undefined);
  assert.equal(strictPage(PAGE.replace("img-src data:", 'img-src https://example.com')), undefined);
  assert.equal(strictPage(PAGE.replace("default-src 'none'", 'default-src *')), undefined);
  const loose = deps({ html: PAGE.replace("default-src 'none'", "default-src 'self'"), title: 't' });
  await showTimeReport([], loose.d);
  assert.deepEqual(loose.shown, []);
  assert.match(loose.told[0], /Content-Security-Policy/);
});
