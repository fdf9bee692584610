// Every call into the `vscode` module goes through here, so the other modules can be tested under
// plain Node with a fake (client/test/fakes/vscode.ts).

import * as vscode from 'vscode';

export type Disposable = vscode.Disposable;
export type Uri = vscode.Uri;

export function parseUri(value: string): vscode.Uri {
  return vscode.Uri.parse(value, true);
}

export function fileUri(fsPath: string): vscode.Uri {
  return vscode.Uri.file(fsPath);
}

export function newEventEmitter<T>(): vscode.EventEmitter<T> {
  return new vscode.EventEmitter<T>();
}

export function getConfiguration(section: string, scope?: vscode.ConfigurationScope): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration(section, scope);
}

export function onDidChangeConfiguration(
  listener: (e: vscode.ConfigurationChangeEvent) => unknown,
): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration(listener);
}

export function isTrusted(): boolean {
  return vscode.workspace.isTrusted;
}

export function onDidGrantWorkspaceTrust(listener: () => unknown): vscode.Disposable {
  return vscode.workspace.onDidGrantWorkspaceTrust(listener);
}

export function workspaceFolders(): readonly vscode.WorkspaceFolder[] {
  return vscode.workspace.workspaceFolders ?? [];
}

export function registerCommand(command: string, callback: (...args: any[]) => any): vscode.Disposable {
  return vscode.commands.registerCommand(command, callback);
}

export function executeCommand<T = unknown>(command: string, ...rest: unknown[]): Thenable<T> {
  return vscode.commands.executeCommand<T>(command, ...rest);
}

export function registerTextDocumentContentProvider(
  scheme: string,
  provider: vscode.TextDocumentContentProvider,
): vscode.Disposable {
  return vscode.workspace.registerTextDocumentContentProvider(scheme, provider);
}

export function createOutputChannel(name: string): vscode.LogOutputChannel {
  return vscode.window.createOutputChannel(name, { log: true });
}

export function createStatusBarItem(id: string, priority: number): vscode.StatusBarItem {
  return vscode.window.createStatusBarItem(id, vscode.StatusBarAlignment.Left, priority);
}

export function activeTextEditor(): vscode.TextEditor | undefined {
  return vscode.window.activeTextEditor;
}

export function visibleTextEditors(): readonly vscode.TextEditor[] {
  return vscode.window.visibleTextEditors;
}

export function textDocuments(): readonly vscode.TextDocument[] {
  return vscode.workspace.textDocuments;
}

export function onDidChangeTextEditorSelection(
  listener: (e: vscode.TextEditorSelectionChangeEvent) => unknown,
): vscode.Disposable {
  return vscode.window.onDidChangeTextEditorSelection(listener);
}

export function onDidChangeVisibleTextEditors(
  listener: (editors: readonly vscode.TextEditor[]) => unknown,
): vscode.Disposable {
  return vscode.window.onDidChangeVisibleTextEditors(listener);
}

export async function openBeside(uri: vscode.Uri, languageId: string): Promise<vscode.TextEditor> {
  let doc = await vscode.workspace.openTextDocument(uri);
  if (doc.languageId !== languageId) {
    doc = await vscode.languages.setTextDocumentLanguage(doc, languageId);
  }
  return vscode.window.showTextDocument(doc, {
    viewColumn: vscode.ViewColumn.Beside,
    preserveFocus: true,
    preview: true,
  });
}

export function createLineHighlight(): vscode.TextEditorDecorationType {
  return vscode.window.createTextEditorDecorationType({
    isWholeLine: true,
    backgroundColor: new vscode.ThemeColor('editor.rangeHighlightBackground'),
    overviewRulerColor: new vscode.ThemeColor('editorOverviewRuler.rangeHighlightForeground'),
    overviewRulerLane: vscode.OverviewRulerLane.Center,
  });
}

/** Highlights whole lines [start, end] (0-based, inclusive) and scrolls the first into the middle. */
export function highlightLines(
  editor: vscode.TextEditor,
  decoration: vscode.TextEditorDecorationType,
  lines: readonly { start: number; end: number }[],
  reveal: boolean,
): void {
  const ranges = lines.map((r) => new vscode.Range(r.start, 0, r.end, 0));
  editor.setDecorations(decoration, ranges);
  if (reveal && ranges.length > 0) {
    const visible = editor.visibleRanges.some((v) => v.contains(ranges[0]));
    if (!visible) {
      editor.revealRange(ranges[0], vscode.TextEditorRevealType.InCenter);
    }
  }
}

export function showInformationMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showInformationMessage(message, ...items);
}

export function showWarningMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showWarningMessage(message, ...items);
}

export function showErrorMessage(message: string, ...items: string[]): Thenable<string | undefined> {
  return vscode.window.showErrorMessage(message, ...items);
}

export function showQuickPick<T extends vscode.QuickPickItem>(
  items: T[],
  options: vscode.QuickPickOptions,
): Thenable<T | undefined> {
  return vscode.window.showQuickPick(items, options);
}

export function withProgress<R>(title: string, task: () => Promise<R>): Thenable<R> {
  return vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, task);
}

/** A cancellable notification; `task` gets a function that registers what Cancel does. */
export function withCancellableProgress<R>(
  title: string,
  task: (onCancel: (handler: () => void) => void, report: (message: string) => void) => Promise<R>,
): Thenable<R> {
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title, cancellable: true },
    (progress, token) =>
      task(
        (handler) => token.onCancellationRequested(handler),
        (message) => progress.report({ message }),
      ),
  );
}

export function showInputBox(prompt: string, placeHolder: string, value: string): Thenable<string | undefined> {
  return vscode.window.showInputBox({ prompt, placeHolder, value, ignoreFocusOut: true });
}

/** A new untitled document holding `content` (a report), shown beside the active editor. */
export async function showUntitled(content: string, languageId: string): Promise<void> {
  const doc = await vscode.workspace.openTextDocument({ content, language: languageId });
  await vscode.window.showTextDocument(doc, { viewColumn: vscode.ViewColumn.Beside, preview: false });
}

let webviewPanel: vscode.WebviewPanel | undefined;

/**
 * One webview panel beside the active editor (made once, revealed and refilled after): `html` carries its own strict
 * Content-Security-Policy; scripts run only as that policy allows (the page's own, by hash), nothing is loaded from
 * disk or the network, and command links do not run.
 */
export function showWebviewBeside(viewType: string, title: string, html: string): vscode.WebviewPanel {
  if (!webviewPanel) {
    webviewPanel = vscode.window.createWebviewPanel(
      viewType,
      title,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: true, enableCommandUris: false, localResourceRoots: [], enableFindWidget: true },
    );
    webviewPanel.onDidDispose(() => {
      webviewPanel = undefined;
    });
  } else {
    webviewPanel.reveal(vscode.ViewColumn.Beside, true);
  }
  webviewPanel.title = title;
  webviewPanel.webview.html = html;
  return webviewPanel;
}

export function openExternal(url: string): Thenable<boolean> {
  return vscode.env.openExternal(vscode.Uri.parse(url));
}

/** Writes a setting to the workspace when one is open, else to the user settings. */
export function updateSetting(section: string, key: string, value: unknown): Thenable<void> {
  const target = vscode.workspace.workspaceFolders?.length
    ? vscode.ConfigurationTarget.Workspace
    : vscode.ConfigurationTarget.Global;
  return vscode.workspace.getConfiguration(section).update(key, value, target);
}

/** Minimal view of the Python extension's environments API. */
export interface PythonApi {
  activeExecutable(resource?: string): Promise<string | undefined>;
  onDidChangeActiveEnvironment(listener: () => unknown): vscode.Disposable;
}

/** The Python extension's API when the extension is installed, else undefined. */
export async function pythonApi(): Promise<PythonApi | undefined> {
  if (!vscode.extensions.getExtension('ms-python.python')) {
    return undefined;
  }
  // Loaded lazily: the package calls into `vscode` when imported.
  const { PythonExtension } = await import('@vscode/python-extension');
  const api = await PythonExtension.api();
  return {
    async activeExecutable(resource?: string) {
      const resourceUri = resource ? vscode.Uri.parse(resource) : undefined;
      const envPath = api.environments.getActiveEnvironmentPath(resourceUri);
      const env = await api.environments.resolveEnvironment(envPath);
      return env?.executable.uri?.fsPath;
    },
    onDidChangeActiveEnvironment(listener) {
      return api.environments.onDidChangeActiveEnvironmentPath(() => listener());
    },
  };
}
