// Starting, restarting and configuring the language server process.

import * as cp from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { LanguageClient, LanguageClientOptions, ServerOptions, StaticFeature, DynamicFeature } from 'vscode-languageclient/node';
import {
  Interpreter,
  installCommand,
  NEUTRAL_CWD,
  parseRequirements,
  probeInterpreter,
  resolveInterpreter,
  Runner,
  serverCommand,
  serverEnv,
} from './interpreter';
import { compactRelatedInformation } from './diagnostics';
import { didChangeConfigurationParams, initializationOptions, readSettings, ServerSettings, SettingProblem } from './settings';
import { executeCommandParams, SERVER_COMMANDS, TRUSTED_COMMANDS } from './protocol';
import { parseStatus, ServerStatus, STATUS_NOTIFICATION, ClientState } from './status';
import * as vscodeapi from './vscodeapi';
import type { LogOutputChannel } from 'vscode';

export { SERVER_COMMANDS, TRUSTED_COMMANDS };

/**
 * A LanguageClient that leaves command registration to us: the built-in feature would register
 * every command the server lists in executeCommandProvider and collide with our own registrations.
 * Our handlers forward SERVER_COMMANDS with workspace/executeCommand.
 */
class TritonlensLanguageClient extends LanguageClient {
  public registerFeature(feature: StaticFeature | DynamicFeature<any>): void {
    if ((feature as DynamicFeature<any>).registrationType?.method === 'workspace/executeCommand') {
      return;
    }
    super.registerFeature(feature);
  }
}

export function readWorkspaceSettings(problems?: SettingProblem[]): ServerSettings {
  const config = vscodeapi.getConfiguration('tritonlens');
  return readSettings((key) => config.get(key), problems);
}

const runProcess: Runner = (command, args, env) =>
  new Promise((resolve, reject) => {
    cp.execFile(command, args, { env, cwd: NEUTRAL_CWD, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 }, (err, stdout, stderr) => {
      if (err && typeof (err as NodeJS.ErrnoException).code === 'string') {
        reject(err); // could not start it at all (ENOENT, EACCES)
        return;
      }
      resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
    });
  });

export class ServerManager {
  private client: TritonlensLanguageClient | undefined;
  private settings: ServerSettings = readWorkspaceSettings();
  private interpreter: Interpreter | undefined;
  private starting: Promise<void> | undefined;
  private python: vscodeapi.PythonApi | undefined | null = null;

  constructor(
    private readonly extensionPath: string,
    private readonly log: LogOutputChannel,
    private readonly onState: (state: ClientState) => void,
    private readonly onStatus: (status: ServerStatus) => void,
  ) {}

  /** The server folder shipped in the .vsix (absent when running from a source checkout). */
  get bundledServerDir(): string | undefined {
    const dir = path.join(this.extensionPath, 'dist', 'server');
    return fs.existsSync(path.join(dir, 'tritonlens', '__init__.py')) ? dir : undefined;
  }

  get languageClient(): LanguageClient | undefined {
    return this.client?.isRunning() ? this.client : undefined;
  }

  get currentSettings(): ServerSettings {
    return this.settings;
  }

  async pythonApi(): Promise<vscodeapi.PythonApi | undefined> {
    if (this.python === null) {
      try {
        this.python = await vscodeapi.pythonApi();
      } catch (err) {
        this.log.warn(`Python extension API unavailable: ${err}`);
        this.python = undefined;
      }
    }
    return this.python;
  }

  /** The interpreter the server runs in, with the environment it gets (the bundled server first on PYTHONPATH):
   * what `tritonlens capture` must run in too. Undefined until an interpreter was resolved. */
  get pythonForTools(): { command: string[]; env: Record<string, string | undefined> } | undefined {
    return this.interpreter
      ? { command: this.interpreter.command, env: serverEnv(this.bundledServerDir, process.env) }
      : undefined;
  }

  /** Whether the running server's interpreter came from the Python extension (so its changes matter). */
  get followsPythonExtension(): boolean {
    return this.interpreter?.source === 'python-extension';
  }

  start(): Promise<void> {
    if (!this.starting) {
      this.starting = this.doStart().finally(() => {
        this.starting = undefined;
      });
    }
    return this.starting;
  }

  async restart(): Promise<void> {
    await this.starting;
    await this.stop();
    await this.start();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client) {
      try {
        await client.stop(5000);
      } catch (err) {
        this.log.warn(`stopping the server: ${err}`);
      }
      await client.dispose();
    }
    this.onState('stopped');
  }

  /** Re-reads the settings; sends them to the server, or restarts it when the interpreter changed. */
  async settingsChanged(): Promise<void> {
    const problems: SettingProblem[] = [];
    const next = readWorkspaceSettings(problems);
    this.reportProblems(problems);
    const restart = JSON.stringify(next.interpreter) !== JSON.stringify(this.settings.interpreter);
    this.settings = next;
    if (restart) {
      await this.restart();
    } else if (this.client?.isRunning()) {
      await this.client.sendNotification('workspace/didChangeConfiguration', didChangeConfigurationParams(next));
    }
  }

  async executeServerCommand(command: string, args: unknown[]): Promise<unknown> {
    const client = this.languageClient;
    if (!client) {
      void vscodeapi.showWarningMessage('tritonlens: the server is not running.', 'Restart Server').then((c) => {
        if (c) {
          void this.restart();
        }
      });
      return undefined;
    }
    return client.sendRequest('workspace/executeCommand', executeCommandParams(command, args));
  }

  private reportProblems(problems: SettingProblem[]): void {
    for (const p of problems) {
      this.log.warn(`setting ${p.key}: ${p.message}`);
    }
    if (problems.length > 0) {
      void vscodeapi.showWarningMessage(`tritonlens: ${problems.map((p) => `${p.key} ${p.message}`).join('; ')}`);
    }
  }

  private async doStart(): Promise<void> {
    if (!vscodeapi.isTrusted()) {
      this.log.info('Workspace not trusted: the server starts once it is (compiling imports user code).');
      this.onState('untrusted');
      return;
    }
    if (this.client) {
      return;
    }
    this.onState('starting');
    const problems: SettingProblem[] = [];
    this.settings = readWorkspaceSettings(problems);
    this.reportProblems(problems);

    const folder = vscodeapi.workspaceFolders()[0];
    const interpreter = await resolveInterpreter(this.settings.interpreter, await this.pythonApi(), {
      resource: folder?.uri.toString(),
      workspaceFolder: folder?.uri.fsPath,
      userHome: os.homedir(),
    });
    this.interpreter = interpreter;
    if (!interpreter) {
      this.onState('failed');
      this.log.error('No Python interpreter: set tritonlens.interpreter or select one in the Python extension.');
      const choice = await vscodeapi.showErrorMessage(
        'tritonlens needs a Python interpreter with triton installed.',
        'Select Interpreter',
        'Open Settings',
      );
      if (choice === 'Select Interpreter') {
        await vscodeapi.executeCommand('python.setInterpreter');
      } else if (choice === 'Open Settings') {
        await vscodeapi.executeCommand('workbench.action.openSettings', 'tritonlens.interpreter');
      }
      return;
    }
    this.log.info(`Interpreter (${interpreter.source}): ${interpreter.command.join(' ')}`);

    const env = serverEnv(this.bundledServerDir, process.env);
    if (!(await this.ensureImportable(interpreter, env))) {
      this.onState('failed');
      return;
    }

    // isolated, outside the workspace: nothing of the workspace is on its import path (it gets the root from
    // `initialize`)
    const { command, args, cwd } = serverCommand(interpreter, this.bundledServerDir);
    const serverOptions: ServerOptions = { command, args, options: { env, cwd } };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: 'file', language: 'python' }],
      initializationOptions: initializationOptions(this.settings),
      outputChannel: this.log,
      markdown: { isTrusted: { enabledCommands: TRUSTED_COMMANDS }, supportHtml: false },
      middleware: {
        handleDiagnostics: (uri, diagnostics, next) => next(uri, compactRelatedInformation(diagnostics)),
      },
    };
    const client = new TritonlensLanguageClient('tritonlens', 'tritonlens', serverOptions, clientOptions);
    client.onNotification(STATUS_NOTIFICATION, (params: unknown) => {
      const status = parseStatus(params);
      if (status) {
        this.onStatus(status);
      }
    });
    this.client = client;
    try {
      await client.start();
      this.onState('running');
      this.log.info(`Server started: ${command} ${args.join(' ')}`);
    } catch (err) {
      this.client = undefined;
      this.onState('failed');
      this.log.error(`The server did not start: ${err}`);
      void vscodeapi.showErrorMessage(`tritonlens: the server did not start (${err}).`, 'Show Output').then((c) => {
        if (c) {
          this.log.show();
        }
      });
    }
  }

  /** Checks the server's imports in this interpreter and offers pip for what is missing. */
  private async ensureImportable(interpreter: Interpreter, env: Record<string, string | undefined>): Promise<boolean> {
    const requirements = this.requirements();
    const modules = requirements.map((r) => r.module);
    let probe = await probeInterpreter(interpreter, runProcess, env, modules, this.bundledServerDir);
    if (probe.error) {
      this.log.error(`${interpreter.command.join(' ')} could not be run: ${probe.error}`);
      void vscodeapi.showErrorMessage(`tritonlens: ${interpreter.command[0]} could not be run. Set tritonlens.interpreter.`);
      return false;
    }
    this.log.info(`Python ${probe.pythonVersion} at ${probe.executable}; tritonlens from ${probe.tritonlensOrigin ?? '(missing)'}`);
    if (probe.ok) {
      return true;
    }
    const pip = installCommand(interpreter, probe.missing, this.bundledServerDir !== undefined, requirements);
    const missing = probe.missing.join(', ');
    if (!pip) {
      this.log.error(`Missing in ${probe.executable}: ${missing}. Install tritonlens there (pip install tritonlens, or pip install -e <checkout>).`);
      void vscodeapi.showErrorMessage(`tritonlens: the Python package tritonlens is not importable by ${probe.executable}.`);
      return false;
    }
    const choice = await vscodeapi.showWarningMessage(
      `tritonlens needs ${missing} in ${probe.executable}. Install with pip?`,
      'Install',
      'Select Interpreter',
    );
    if (choice === 'Select Interpreter') {
      if (interpreter.source === 'python-extension') {
        await vscodeapi.executeCommand('python.setInterpreter');
      } else {
        await vscodeapi.executeCommand('workbench.action.openSettings', 'tritonlens.interpreter');
      }
      return false;
    }
    if (choice !== 'Install') {
      return false;
    }
    const ok = await vscodeapi.withProgress('tritonlens: installing the server dependencies', () => this.runPip(pip, env));
    if (!ok) {
      void vscodeapi.showErrorMessage('tritonlens: pip install failed; see Output → tritonlens.', 'Show Output').then((c) => {
        if (c) {
          this.log.show();
        }
      });
      return false;
    }
    probe = await probeInterpreter(interpreter, runProcess, env, modules, this.bundledServerDir);
    return probe.ok;
  }

  private requirements() {
    const dir = this.bundledServerDir;
    const file = dir ? path.join(dir, 'requirements.txt') : undefined;
    return parseRequirements(file && fs.existsSync(file) ? fs.readFileSync(file, 'utf8') : undefined);
  }

  private runPip(command: string[], env: Record<string, string | undefined>): Promise<boolean> {
    this.log.info(`$ ${command.join(' ')}`);
    return new Promise((resolve) => {
      const child = cp.spawn(command[0], command.slice(1), { env, cwd: NEUTRAL_CWD });
      child.stdout.on('data', (d: Buffer) => this.log.info(d.toString().trimEnd()));
      child.stderr.on('data', (d: Buffer) => this.log.warn(d.toString().trimEnd()));
      child.on('error', (err) => {
        this.log.error(String(err));
        resolve(false);
      });
      child.on('close', (code) => resolve(code === 0));
    });
  }
}
