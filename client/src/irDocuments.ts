// IR documents: `tritonlens-ir:` URIs whose text comes from the server's `tritonlens/irDocument`
// request, and the IR line ranges that belong to a source line.

import * as vscodeapi from './vscodeapi';

export const IR_SCHEME = 'tritonlens-ir';
export const IR_DOCUMENT_REQUEST = 'tritonlens/irDocument';

export type Stage = 'ttir' | 'ttgir' | 'llir' | 'ptx' | 'sass' | 'amdgcn';
export const STAGES: readonly Stage[] = ['ttir', 'ttgir', 'llir', 'ptx', 'sass', 'amdgcn'];

/** Our language ids and the file extension used in IR URIs (so the tab title says what it is). */
const STAGE_LANGUAGE: Record<Stage, { languageId: string; ext: string }> = {
  ttir: { languageId: 'tritonlens-ttir', ext: 'ttir' },
  ttgir: { languageId: 'tritonlens-ttgir', ext: 'ttgir' },
  llir: { languageId: 'tritonlens-llvm-ir', ext: 'llir' },
  ptx: { languageId: 'tritonlens-ptx', ext: 'ptx' },
  sass: { languageId: 'tritonlens-sass', ext: 'nvsass' },
  amdgcn: { languageId: 'tritonlens-amdgcn', ext: 'amdgcn' },
};

export function isStage(value: unknown): value is Stage {
  return typeof value === 'string' && (STAGES as readonly string[]).includes(value);
}

export function languageForStage(stage: Stage): string {
  return STAGE_LANGUAGE[stage].languageId;
}

/** Params of `tritonlens/irDocument` (also the argument of the `tritonlens.showIr` command, without `have`). */
export interface IrRequest {
  uri: string;
  kernel: string | null;
  stage: Stage;
  line: number | null;
  /** The text the client already holds (`path` and `hash` of an earlier answer): the server then leaves `text` out while it is current. */
  have?: IrHave;
}

export interface IrHave {
  path: string | null;
  hash: string;
}

export interface IrLineRange {
  start: number;
  end: number;
}

export interface IrResult {
  text: string;
  languageId: string;
  path: string | null;
  ranges: IrLineRange[];
  kernel: string;
  spec: string;
  target: string;
  /** Content hash of `text` (servers before this field existed leave it out; then `have` is never sent). */
  hash?: string;
}

/** What the server answers: the full result, or, when the request's `have` is still current, the same without `text`. */
export type IrAnswer = IrResult | (Omit<IrResult, 'text'> & { unchanged: true; text?: undefined });

/** What names one IR document: the same kernel and stage of the same file is one tab, whatever the line. */
export interface IrDocumentKey {
  uri: string;
  kernel: string;
  stage: Stage;
}

export function irUri(key: IrDocumentKey): string {
  const file = key.uri.split('/').pop() || 'source';
  const path = `/${encodeURIComponent(decodeURIComponent(file))}/${encodeURIComponent(key.kernel)}.${STAGE_LANGUAGE[key.stage].ext}`;
  const query = encodeURIComponent(JSON.stringify({ uri: key.uri, kernel: key.kernel, stage: key.stage }));
  return `${IR_SCHEME}:${path}?${query}`;
}

/** The key back from a URI's (decoded) query, or undefined if it is not one of ours. */
export function parseIrQuery(query: string): IrDocumentKey | undefined {
  let value: unknown;
  try {
    value = JSON.parse(query);
  } catch {
    return undefined;
  }
  const v = value as Partial<IrDocumentKey>;
  if (typeof v?.uri !== 'string' || typeof v.kernel !== 'string' || !isStage(v.stage)) {
    return undefined;
  }
  return { uri: v.uri, kernel: v.kernel, stage: v.stage };
}

export function keyString(key: IrDocumentKey): string {
  return JSON.stringify([key.uri, key.kernel, key.stage]);
}

/**
 * Server ranges → editor lines: clamped to the document, empty or inverted ones dropped,
 * sorted, overlapping and adjacent ones merged.
 */
export function lineRanges(ranges: readonly IrLineRange[] | undefined, lineCount: number): IrLineRange[] {
  if (!ranges || lineCount <= 0) {
    return [];
  }
  const clamped = ranges
    .filter((r) => Number.isInteger(r.start) && Number.isInteger(r.end) && r.end >= r.start)
    .map((r) => ({ start: Math.max(0, r.start), end: Math.min(lineCount - 1, r.end) }))
    .filter((r) => r.start <= r.end)
    .sort((a, b) => a.start - b.start);
  const merged: IrLineRange[] = [];
  for (const r of clamped) {
    const last = merged[merged.length - 1];
    if (last && r.start <= last.end + 1) {
      last.end = Math.max(last.end, r.end);
    } else {
      merged.push({ ...r });
    }
  }
  return merged;
}

export function countLines(text: string): number {
  let n = 1;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) {
    n++;
  }
  return n;
}

/** Parses the argument of `tritonlens.showIr` (from hovers, code lenses or our own commands). */
export function parseShowIrArgs(arg: unknown): IrRequest | undefined {
  const a = (Array.isArray(arg) ? arg[0] : arg) as Partial<IrRequest> | undefined;
  if (!a || typeof a.uri !== 'string' || !isStage(a.stage)) {
    return undefined;
  }
  return {
    uri: a.uri,
    kernel: typeof a.kernel === 'string' ? a.kernel : null,
    stage: a.stage,
    line: typeof a.line === 'number' && Number.isInteger(a.line) && a.line >= 0 ? a.line : null,
  };
}

/** The request of a "Show <stage> for Kernel at Cursor" command: the server picks the kernel at `line` (0-based). */
export function cursorIrRequest(uri: string, stage: Stage, line: number): IrRequest {
  return { uri, kernel: null, stage, line };
}

/**
 * The request sent when the cursor moves to another source line while an IR document of the file is visible;
 * with `held` (the answer the document shows) it names that text so the server need not send it again.
 */
export function followIrRequest(key: IrDocumentKey, line: number, held?: IrResult): IrRequest {
  const request: IrRequest = { uri: key.uri, kernel: key.kernel, stage: key.stage, line };
  const have = haveOf(held);
  return have ? { ...request, have } : request;
}

/** `have` for a result the client holds, or undefined when the server gave no hash. */
export function haveOf(held: IrResult | undefined): IrHave | undefined {
  return held && typeof held.hash === 'string' ? { path: held.path ?? null, hash: held.hash } : undefined;
}

/** The log line of an opened IR document: kernel, stage and the spec it was compiled under. The server's spec
 * description already starts with the target (`cuda:90, num_warps=4, …`); the target is added only when it does not. */
export function irLogLine(kernel: string, stage: Stage, result: Pick<IrResult, 'spec' | 'target'>): string {
  const spec = result.spec ?? '';
  const named = spec === result.target || spec.startsWith(`${result.target},`) || spec.startsWith(`${result.target} `);
  const assumptions = named || !result.target ? spec : spec ? `${result.target}, ${spec}` : result.target;
  return `${kernel} ${stage} [${assumptions}]`;
}

/** A `command:` link that opens an IR document, as the server puts in hovers. */
export function showIrCommandLink(args: IrRequest): string {
  return `command:tritonlens.showIr?${encodeURIComponent(JSON.stringify([args]))}`;
}

export type SendIrRequest = (params: IrRequest) => Promise<IrAnswer | null | undefined>;

interface Entry {
  result: IrResult;
  /** The source line last asked for, so a refresh after a recompile keeps the same highlight. */
  line: number | null;
  /** Lines of `result.text`, counted once per text (highlighting clamps to it on every cursor move). */
  lineCount: number;
}

/**
 * The content provider. `show` asks the server (with the cursor's line, for the ranges) and keeps the
 * answer; VS Code then reads the text through `provideTextDocumentContent`.
 */
export class IrDocumentProvider {
  private readonly entries = new Map<string, Entry>();
  private readonly changed = vscodeapi.newEventEmitter<vscodeapi.Uri>();
  readonly onDidChange = this.changed.event;

  constructor(private readonly send: SendIrRequest) {}

  /**
   * Asks the server for one kernel's IR; returns the URI to open, or undefined when nothing is compiled.
   * When the request names its kernel and that document's text is held here, the request says so (`have`) and an
   * `unchanged` answer (no text) only updates the ranges: `changed` is false and the text is the held one.
   */
  async fetch(
    request: IrRequest,
  ): Promise<{ uri: string; key: IrDocumentKey; result: IrResult; lineCount: number; changed: boolean } | undefined> {
    const held = request.kernel !== null ? this.entries.get(keyString({ uri: request.uri, kernel: request.kernel, stage: request.stage })) : undefined;
    const have = request.have ?? haveOf(held?.result);
    const asked: IrRequest = have ? { ...request, have } : request;
    let answer = await this.send(asked);
    let previous: Entry | undefined;
    let result: IrResult | undefined;
    if (answer && typeof answer.text !== 'string' && (answer as { unchanged?: boolean }).unchanged === true) {
      const key: IrDocumentKey = { uri: request.uri, kernel: answer.kernel ?? request.kernel ?? 'kernel', stage: request.stage };
      previous = this.entries.get(keyString(key));
      if (previous && previous.result.hash === answer.hash && previous.result.path === answer.path) {
        const { unchanged: _unchanged, ...rest } = answer as IrAnswer & { unchanged: true };
        result = { ...rest, text: previous.result.text };
      } else {
        // What we held went away meanwhile (a refresh replaced it): ask for the text.
        const { have: _have, ...plain } = asked;
        answer = await this.send(plain);
      }
    }
    if (!result) {
      if (!answer || typeof answer.text !== 'string') {
        return undefined;
      }
      result = answer as IrResult;
    }
    const key: IrDocumentKey = { uri: request.uri, kernel: result.kernel ?? request.kernel ?? 'kernel', stage: request.stage };
    const k = keyString(key);
    previous = this.entries.get(k);
    const same = previous !== undefined && previous.result.text === result.text;
    const lineCount = same ? previous!.lineCount : countLines(result.text);
    this.entries.set(k, { result, line: request.line, lineCount });
    const uri = irUri(key);
    if (previous && !same) {
      this.changed.fire(vscodeapi.parseUri(uri));
    }
    return { uri, key, result, lineCount, changed: !same };
  }

  async provideTextDocumentContent(uri: { query: string }): Promise<string> {
    const key = parseIrQuery(uri.query);
    if (!key) {
      return '// tritonlens: not an IR document URI';
    }
    const entry = this.entries.get(keyString(key));
    if (entry) {
      return entry.result.text;
    }
    // Opened without `show` (e.g. a restored tab): ask for the whole kernel.
    const fetched = await this.fetch({ uri: key.uri, kernel: key.kernel, stage: key.stage, line: null });
    return fetched?.result.text ?? `// tritonlens: ${key.kernel} has not been compiled yet; save ${key.uri} to compile it.`;
  }

  get(key: IrDocumentKey): IrResult | undefined {
    return this.entries.get(keyString(key))?.result;
  }

  /** Lines of the held text of `key` (0 when none is held). */
  lineCount(key: IrDocumentKey): number {
    return this.entries.get(keyString(key))?.lineCount ?? 0;
  }

  /** Re-asks the server for every document it has shown (after a recompile); fires a change where text moved. */
  async refreshAll(): Promise<void> {
    const all = [...this.entries.entries()];
    await Promise.all(
      all.map(async ([k, entry]) => {
        const [uri, kernel, stage] = JSON.parse(k) as [string, string, Stage];
        try {
          await this.fetch({ uri, kernel, stage, line: entry.line });
        } catch {
          // The server may be restarting; the next show or save will fetch again.
        }
      }),
    );
  }

  forget(key: IrDocumentKey): void {
    this.entries.delete(keyString(key));
  }

  dispose(): void {
    this.changed.dispose();
    this.entries.clear();
  }
}
