// "Show where the time goes": ask the server for the report page of the open file (its `tritonlens/timeReport`
// request: the kernels ranked by captured GPU time, each one's roofline, then findings and IR) and show it in a
// webview beside the source. The server also puts a lens on each captured kernel that runs this command with the
// file's URI. Plain logic here; VS Code is reached through `TimeReportDeps` (extension.ts wires it).

export const TIME_COMMAND = 'tritonlens.showTimeReport';
export const TIME_REQUEST = 'tritonlens/timeReport';
export const TIME_VIEW = 'tritonlens.timeReport';

export interface TimeAnswer {
  html: string;
  title: string;
  bytes?: number;
}

export interface TimeReportDeps {
  /** The URI of the active Python document, if any. */
  activeUri(): string | undefined;
  /** The server's answer; undefined when the server is not running. */
  request(uri: string): Promise<TimeAnswer | null | undefined>;
  /** Shows (or updates) the webview beside the source. */
  show(html: string, title: string): void;
  info(message: string): void;
}

/** The lens's argument (VS Code spreads `[uri]`), or undefined: the palette gives none. */
export function parseTimeArgs(args: unknown[]): string | undefined {
  const flat = args.flatMap((a) => (Array.isArray(a) ? a : [a]));
  return flat.find((a): a is string => typeof a === 'string' && /^[a-z][a-z0-9+.-]*:/i.test(a));
}

/**
 * The page as the webview may show it: only when its own Content-Security-Policy lets nothing load from anywhere
 * (`default-src 'none'`, scripts by hash only, no remote source), else undefined. The report makes such a page; the
 * check keeps an answer that is not one (a server of another version, a tampered one) out of the webview.
 */
export function strictPage(html: string): string | undefined {
  const m = /<meta http-equiv="Content-Security-Policy" content="([^"]*)">/i.exec(html.slice(0, 4096));
  if (!m) {
    return undefined;
  }
  const policy = m[1].replace(/&#x27;|&#39;/g, "'");
  const directives = new Map(
    policy.split(';').map((d) => d.trim().split(/\s+/)).filter((d) => d[0]).map((d) => [d[0], d.slice(1)] as const),
  );
  const script = directives.get('script-src') ?? [];
  const strict =
    directives.get('default-src')?.join(' ') === "'none'" &&
    script.every((s) => /^'sha256-[A-Za-z0-9+/=]+'$/.test(s)) &&
    ![...directives.values()].flat().some((s) => /^(https?:|\*|'unsafe-eval')/.test(s));
  return strict ? html : undefined;
}

export async function showTimeReport(args: unknown[], deps: TimeReportDeps): Promise<TimeAnswer | undefined> {
  const uri = parseTimeArgs(args) ?? deps.activeUri();
  if (!uri) {
    deps.info('tritonlens: open a Python file with @triton.jit kernels to see where its time goes.');
    return undefined;
  }
  const answer = await deps.request(uri);
  if (!answer) {
    deps.info('tritonlens: nothing compiled in this file yet. Save it to compile it (or start the server).');
    return undefined;
  }
  const page = strictPage(answer.html);
  if (!page) {
    deps.info('tritonlens: the report page came without a strict Content-Security-Policy; not shown.');
    return undefined;
  }
  deps.show(page, answer.title);
  return answer;
}
