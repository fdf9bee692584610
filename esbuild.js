// Builds the extension bundle (dist/extension.js) or, with --tests, the unit tests (out/test/*.test.js).
// Tests get `vscode` aliased to a small fake, so they run under plain Node.
const esbuild = require('esbuild');
const fs = require('fs');
const path = require('path');

const production = process.argv.includes('--production');
const tests = process.argv.includes('--tests');

async function main() {
  if (tests) {
    const dir = path.join(__dirname, 'client', 'test');
    const entryPoints = fs.readdirSync(dir).filter((f) => f.endsWith('.test.ts')).map((f) => path.join(dir, f));
    fs.rmSync(path.join(__dirname, 'out', 'test'), { recursive: true, force: true });
    await esbuild.build({
      entryPoints,
      bundle: true,
      platform: 'node',
      target: 'node18',
      format: 'cjs',
      outdir: path.join(__dirname, 'out', 'test'),
      sourcemap: 'inline',
      alias: { vscode: path.join(dir, 'fakes', 'vscode.ts') },
      logLevel: 'warning',
    });
    return;
  }
  await esbuild.build({
    entryPoints: [path.join(__dirname, 'client', 'src', 'extension.ts')],
    bundle: true,
    platform: 'node',
    target: 'node18',
    format: 'cjs',
    outfile: path.join(__dirname, 'dist', 'extension.js'),
    external: ['vscode'],
    minify: production,
    sourcemap: !production,
    logLevel: 'warning',
  });
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
