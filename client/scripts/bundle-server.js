// Copies the Python server (server/tritonlens) into dist/server for the .vsix, without caches, and
// writes dist/server/requirements.txt from pyproject.toml's dependencies (the client offers to pip
// install those into the user's interpreter).
const fs = require('fs');
const path = require('path');

const root = path.join(__dirname, '..', '..');
const src = path.join(root, 'server', 'tritonlens');
const dest = path.join(root, 'dist', 'server');
const SKIP = new Set(['__pycache__', '.pytest_cache', '.mypy_cache', '.ruff_cache']);

function copy(from, to) {
  fs.mkdirSync(to, { recursive: true });
  for (const entry of fs.readdirSync(from, { withFileTypes: true })) {
    if (SKIP.has(entry.name) || entry.name.endsWith('.pyc')) {
      continue;
    }
    const a = path.join(from, entry.name);
    const b = path.join(to, entry.name);
    if (entry.isDirectory()) {
      copy(a, b);
    } else if (entry.isFile()) {
      fs.copyFileSync(a, b);
    }
  }
}

function dependencies(pyproject) {
  const block = /^dependencies\s*=\s*\[([\s\S]*?)\]/m.exec(pyproject);
  if (!block) {
    throw new Error('pyproject.toml has no [project] dependencies list');
  }
  return [...block[1].matchAll(/"([^"]+)"/g)].map((m) => m[1]);
}

if (!fs.existsSync(path.join(src, '__init__.py'))) {
  throw new Error(`${src} is not a Python package`);
}
fs.rmSync(dest, { recursive: true, force: true });
copy(src, path.join(dest, 'tritonlens'));
const deps = dependencies(fs.readFileSync(path.join(root, 'pyproject.toml'), 'utf8'));
fs.writeFileSync(path.join(dest, 'requirements.txt'), deps.join('\n') + '\n');
console.log(`bundled server: ${path.relative(root, dest)} (${deps.join(', ')})`);
