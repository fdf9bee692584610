// Activation: wires the server, the IR documents, the status bar and the commands together.

import * as cp from 'child_process';
import type * as vscode from 'vscode';
import { CAPTURE_COMMAND, CaptureDeps, captureLaunches } from './capture';
import { COMPARE_COMMAND, COMPARE_SERVER_COMMAND, CompareAnswer, CompareDeps, compareWithRelease } from './compare';
import { TIME_COMMAND, TIME_REQUEST, TIME_VIEW, TimeAnswer, TimeReportDeps, showTimeReport } from './timeReport';
import {
  IR_DOCUMENT_REQUEST,
  IR_SCHEME,
  IrDocumentProvider,
  IrAnswer,
  IrLineRange,
  IrRequest,
  Stage,
  cursorIrRequest,
  followIrRequest,
  irLogLine,
  languageForStage,
  lineRanges,
  parseIrQuery,
  parseShowIrArgs,
} from './irDocuments';
import { ServerManager } from './server';
import { KNOWN_TARGETS } from './settings';
import { ClientState, ServerStatus, statusView } from './status';
import * as vscodeapi from './vscodeapi';

const STAGE_COMMANDS: [string, Stage][] = [
  ['tritonlens.showTtir', 'ttir'],
  ['tritonlens.showTtgir', 'ttgir'],
  ['tritonlens.showLlir', 'llir'],
  ['tritonlens.showPtx', 'ptx'],
  ['tritonlens.showSass', 'sass'],
  ['tritonlens.showAmdgcn', 'amdgcn'],
];

let manager: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscodeapi.createOutputChannel('tritonlens');
  const statusItem = vscodeapi.createStatusBarItem('tritonlens.status', 50);
  statusItem.name = 'tritonlens';
  statusItem.command = 'tritonlens.selectTarget';
  const highlight = vscodeapi.createLineHighlight();
  context.subscriptions.push(log, statusItem, highlight);

  let clientState: ClientState = 'stopped';
  let serverStatus: ServerStatus | undefined;
  const render = () => {
    const view = statusView(clientState, manager?.currentSettings.target ?? 'auto', serverStatus);
    statusItem.text = view.text;
    statusItem.tooltip = view.tooltip;
    statusItem.show();
  };

  const server = new ServerManager(
    context.extensionPath,
    log,
    (state) => {
      clientState = state;
      if (state !== 'running') {
        serverStatus = undefined;
      }
      render();
    },
    (status) => {
      const finished = serverStatus?.state === 'compiling' && status.state === 'idle';
      serverStatus = status;
      render();
      if (finished) {
        void irDocuments.refreshAll().then(() => rehighlightVisible());
      }
    },
  );
  manager = server;

  const irDocuments = new IrDocumentProvider(async (params) => {
    const client = server.languageClient;
    if (!client) {
      return undefined;
    }
    return client.sendRequest<IrAnswer | null>(IR_DOCUMENT_REQUEST, params);
  });
  context.subscriptions.push(irDocuments, vscodeapi.registerTextDocumentContentProvider(IR_SCHEME, irDocuments));

  // The source line each visible IR editor highlights, keyed by its URI.
  const shownLine = new Map<string, number | null>();

  // The line count is the provider's, counted once per text: a cursor-follow answer carries only ranges.
  const highlightIn = (editor: vscode.TextEditor, fetched: { result: { ranges: IrLineRange[] }; lineCount: number }, reveal: boolean) => {
    const lines = lineRanges(fetched.result.ranges, fetched.lineCount);
    vscodeapi.highlightLines(editor, highlight, lines, reveal);
  };

  async function showIr(arg: unknown): Promise<void> {
    const request = parseShowIrArgs(arg);
    if (!request) {
      log.warn(`tritonlens.showIr: bad arguments ${JSON.stringify(arg)}`);
      return;
    }
    if (!server.languageClient) {
      void vscodeapi.showWarningMessage('tritonlens: the server is not running, so there is no IR to show.');
      return;
    }
    const fetched = await irDocuments.fetch(request);
    if (!fetched) {
      const where = request.kernel ?? (request.line !== null ? `the kernel at line ${request.line + 1}` : 'this file');
      void vscodeapi.showInformationMessage(
        `tritonlens: no ${request.stage.toUpperCase()} for ${where} yet. Save the file to compile it (the target may not produce this stage).`,
      );
      return;
    }
    const editor = await vscodeapi.openBeside(vscodeapi.parseUri(fetched.uri), languageForStage(request.stage));
    shownLine.set(editor.document.uri.toString(), request.line);
    highlightIn(editor, fetched, true);
    log.info(irLogLine(fetched.key.kernel, request.stage, fetched.result));
  }

  function rehighlightVisible(): void {
    for (const editor of vscodeapi.visibleTextEditors()) {
      if (editor.document.uri.scheme !== IR_SCHEME) {
        continue;
      }
      const key = parseIrQuery(editor.document.uri.query);
      const result = key && irDocuments.get(key);
      if (key && result) {
        highlightIn(editor, { result, lineCount: irDocuments.lineCount(key) }, false);
      }
    }
  }

  // Follow the cursor: when it moves to another line of a source file whose IR is open beside it,
  // ask for that line's ranges.
  let followTimer: NodeJS.Timeout | undefined;
  const lastSourceLine = new Map<string, number>();
  const follow = (e: vscode.TextEditorSelectionChangeEvent) => {
    const doc = e.textEditor.document;
    if (doc.uri.scheme !== 'file' || doc.languageId !== 'python') {
      return;
    }
    const source = doc.uri.toString();
    const line = e.selections[0]?.active.line ?? 0;
    if (lastSourceLine.get(source) === line) {
      return;
    }
    lastSourceLine.set(source, line);
    clearTimeout(followTimer);
    followTimer = setTimeout(async () => {
      for (const editor of vscodeapi.visibleTextEditors()) {
        const key = editor.document.uri.scheme === IR_SCHEME ? parseIrQuery(editor.document.uri.query) : undefined;
        if (!key || key.uri !== source || shownLine.get(editor.document.uri.toString()) === line) {
          continue;
        }
        shownLine.set(editor.document.uri.toString(), line);
        try {
          // Names the text the tab holds, so the answer is only the new ranges while that text is current.
          const fetched = await irDocuments.fetch(followIrRequest(key, line, irDocuments.get(key)));
          if (fetched) {
            highlightIn(editor, fetched, true);
          }
        } catch (err) {
          log.debug(`follow cursor: ${err}`);
        }
      }
    }, 200);
  };

  const activeSourceRequest = (stage: Stage): IrRequest | undefined => {
    const editor = vscodeapi.activeTextEditor();
    if (!editor || editor.document.languageId !== 'python') {
      void vscodeapi.showInformationMessage('tritonlens: put the cursor in a @triton.jit kernel of a Python file.');
      return undefined;
    }
    return cursorIrRequest(editor.document.uri.toString(), stage, editor.selection.active.line);
  };

  context.subscriptions.push(
    ...STAGE_COMMANDS.map(([command, stage]) =>
      vscodeapi.registerCommand(command, async () => {
        const request = activeSourceRequest(stage);
        if (request) {
          await showIr([request]);
        }
      }),
    ),
    vscodeapi.registerCommand('tritonlens.showIr', (...args: unknown[]) => showIr(args)),
    vscodeapi.registerCommand('tritonlens.recompile', (...args: unknown[]) =>
      server.executeServerCommand('tritonlens.recompile', args),
    ),
    vscodeapi.registerCommand('tritonlens.profileKernel', (...args: unknown[]) =>
      server.executeServerCommand('tritonlens.profileKernel', args),
    ),
    vscodeapi.registerCommand('tritonlens.benchKernel', (...args: unknown[]) =>
      server.executeServerCommand('tritonlens.benchKernel', args),
    ),
    vscodeapi.registerCommand(CAPTURE_COMMAND, (...args: unknown[]) => captureLaunches(args, captureDeps(server, log))),
    vscodeapi.registerCommand(COMPARE_COMMAND, (...args: unknown[]) => compareWithRelease(args, compareDeps(server))),
    vscodeapi.registerCommand(TIME_COMMAND, (...args: unknown[]) => showTimeReport(args, timeReportDeps(server))),
    vscodeapi.registerCommand('tritonlens.restartServer', () => server.restart()),
    vscodeapi.registerCommand('tritonlens.showOutput', () => log.show()),
    vscodeapi.registerCommand('tritonlens.selectTarget', async () => {
      const current = server.currentSettings.target;
      const items = KNOWN_TARGETS.map((t) => ({
        label: t.target,
        description: t.target === current ? `${t.description} (current)` : t.description,
        picked: t.target === current,
      }));
      const pick = await vscodeapi.showQuickPick(items, { title: 'tritonlens: compile for which GPU?', placeHolder: current });
      if (pick && pick.label !== current) {
        await vscodeapi.updateSetting('tritonlens', 'target', pick.label);
      }
    }),
    vscodeapi.onDidChangeTextEditorSelection(follow),
    vscodeapi.onDidChangeConfiguration(async (e) => {
      if (e.affectsConfiguration('tritonlens')) {
        await server.settingsChanged();
        render();
      }
    }),
    vscodeapi.onDidGrantWorkspaceTrust(() => server.start()),
    { dispose: () => clearTimeout(followTimer) },
  );

  const python = await server.pythonApi();
  if (python) {
    context.subscriptions.push(
      python.onDidChangeActiveEnvironment(() => {
        if (server.followsPythonExtension || !server.languageClient) {
          log.info('The Python extension changed the interpreter; restarting the server.');
          void server.restart();
        }
      }),
    );
  }

  render();
  await server.start();
}

/** The URI of the active editor's document when it is Python. */
function activePythonUri(): string | undefined {
  const editor = vscodeapi.activeTextEditor();
  return editor && editor.document.languageId === 'python' ? editor.document.uri.toString() : undefined;
}

/** `compareWithRelease` wired to VS Code and the server. */
function compareDeps(server: ServerManager): CompareDeps {
  return {
    activeUri: activePythonUri,
    pick: async (items, title) => (await vscodeapi.showQuickPick(items.map((label) => ({ label })), { title }))?.label,
    ask: async (prompt, placeHolder) => vscodeapi.showInputBox(prompt, placeHolder, ''),
    run: async (args) =>
      vscodeapi.withProgress(
        `tritonlens: compiling under triton ${args.release ?? args.python} too (the first time also installs it)…`,
        async () => (await server.executeServerCommand(COMPARE_SERVER_COMMAND, [args])) as CompareAnswer | undefined,
      ),
    show: (text) => vscodeapi.showUntitled(text, 'plaintext'),
    info: (message) => void vscodeapi.showInformationMessage(message),
  };
}

/** `showTimeReport` wired to VS Code and the server. */
function timeReportDeps(server: ServerManager): TimeReportDeps {
  return {
    activeUri: activePythonUri,
    request: async (uri) =>
      server.languageClient?.sendRequest<TimeAnswer | null>(TIME_REQUEST, { uri }) ?? Promise.resolve(undefined),
    show: (html, title) => void vscodeapi.showWebviewBeside(TIME_VIEW, title, html),
    info: (message) => void vscodeapi.showInformationMessage(message),
  };
}

/** `captureLaunches` wired to VS Code, a child process in its own process group, and the server. */
function captureDeps(server: ServerManager, log: vscode.LogOutputChannel): CaptureDeps {
  const show = { info: vscodeapi.showInformationMessage, warn: vscodeapi.showWarningMessage, error: vscodeapi.showErrorMessage };
  return {
    trusted: () => vscodeapi.isTrusted(),
    commandLine: () => vscodeapi.getConfiguration('tritonlens').get<string>('captureCommand') ?? '',
    askCommandLine: async () => {
      const typed = await vscodeapi.showInputBox(
        'The command that launches your kernels on this GPU, run under `tritonlens capture` in the workspace folder',
        'pytest tests/test_rms_norm.py -x',
        '',
      );
      if (typed?.trim()) {
        await vscodeapi.updateSetting('tritonlens', 'captureCommand', typed.trim());
      }
      return typed;
    },
    python: () => server.pythonForTools,
    cwd: () => vscodeapi.workspaceFolders()[0]?.uri.fsPath,
    spawn: (command, args, cwd, env) => cp.spawn(command, args, { cwd, env, detached: true }),
    stop: (child) => {
      const pid = (child as cp.ChildProcess).pid;
      try {
        if (pid) {
          process.kill(-pid, 'SIGTERM'); // the capture and the command it runs
        }
      } catch {
        (child as cp.ChildProcess).kill('SIGTERM');
      }
    },
    progress: (title, task) => vscodeapi.withCancellableProgress(title, task),
    log: (text, level) => log[level](text),
    message: (level, text, ...actions) => show[level](text, ...actions),
    openExternal: (url) => vscodeapi.openExternal(url),
    recompile: (uri) => server.executeServerCommand('tritonlens.recompile', [uri]),
  };
}

export async function deactivate(): Promise<void> {
  await manager?.stop();
  manager = undefined;
}
