// A stand-in for the `vscode` module under plain Node (esbuild aliases `vscode` to this file for
// tests). It implements only what the modules under test touch; VS Code itself cannot run here.

export class Uri {
  private constructor(
    readonly scheme: string,
    readonly authority: string,
    readonly path: string,
    readonly query: string,
    readonly fragment: string,
  ) {}

  /** Like VS Code's Uri.parse: components come back percent-decoded. */
  static parse(value: string): Uri {
    const m = /^([a-zA-Z][\w+.-]*):(?:\/\/([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?$/.exec(value);
    if (!m) {
      throw new Error(`bad URI ${value}`);
    }
    const dec = (s: string | undefined) => decodeURIComponent(s ?? '');
    return new Uri(m[1], dec(m[2]), dec(m[3]), dec(m[4]), dec(m[5]));
  }

  static file(fsPath: string): Uri {
    return new Uri('file', '', fsPath, '', '');
  }

  get fsPath(): string {
    return this.path;
  }

  toString(): string {
    const q = this.query ? `?${encodeURIComponent(this.query)}` : '';
    return `${this.scheme}:${this.authority ? `//${this.authority}` : ''}${this.path}${q}`;
  }
}

export class EventEmitter<T> {
  private listeners: ((e: T) => void)[] = [];
  readonly event = (listener: (e: T) => void) => {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  };
  fire(e: T): void {
    for (const l of this.listeners) {
      l(e);
    }
  }
  dispose(): void {
    this.listeners = [];
  }
}
