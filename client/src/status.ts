// The status bar text, from the server's `tritonlens/status` notification and the client's own state.

export const STATUS_NOTIFICATION = 'tritonlens/status';

export interface ServerStatus {
  state: 'idle' | 'compiling';
  target: string;
  errors: number;
  warnings: number;
  message: string;
}

export type ClientState = 'starting' | 'running' | 'stopped' | 'untrusted' | 'failed';

export interface StatusView {
  text: string;
  tooltip: string;
}

export function parseStatus(params: unknown): ServerStatus | undefined {
  const p = params as Partial<ServerStatus> | undefined;
  if (!p || (p.state !== 'idle' && p.state !== 'compiling')) {
    return undefined;
  }
  return {
    state: p.state,
    target: typeof p.target === 'string' ? p.target : '',
    errors: typeof p.errors === 'number' ? p.errors : 0,
    warnings: typeof p.warnings === 'number' ? p.warnings : 0,
    message: typeof p.message === 'string' ? p.message : '',
  };
}

export function statusView(client: ClientState, configuredTarget: string, server: ServerStatus | undefined): StatusView {
  const target = server?.target || configuredTarget;
  switch (client) {
    case 'untrusted':
      return { text: '$(shield) Triton', tooltip: 'tritonlens compiles nothing until this workspace is trusted' };
    case 'starting':
      return { text: `$(loading~spin) Triton ${target}`, tooltip: 'tritonlens: starting the server' };
    case 'failed':
      return { text: `$(error) Triton ${target}`, tooltip: 'tritonlens: the server is not running (see Output → tritonlens)' };
    case 'stopped':
      return { text: `$(debug-stop) Triton ${target}`, tooltip: 'tritonlens: the server is stopped' };
    case 'running':
      break;
  }
  const tip = [`tritonlens · target ${target}`, server?.message].filter(Boolean).join('\n') + '\nClick to select the target';
  if (server?.state === 'compiling') {
    return { text: `$(sync~spin) Triton ${target}: compiling…`, tooltip: tip };
  }
  const counts: string[] = [];
  if (server && server.errors > 0) {
    counts.push(`$(error) ${server.errors}`);
  }
  if (server && server.warnings > 0) {
    counts.push(`$(warning) ${server.warnings}`);
  }
  return { text: [`$(check) Triton ${target}`, ...counts].join(' '), tooltip: tip };
}
