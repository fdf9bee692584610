// Commands the server implements, and the shape in which the client forwards them.

/** Commands the server may put in hovers and code lenses; the client registers them all itself. */
export const SERVER_COMMANDS = ['tritonlens.recompile', 'tritonlens.profileKernel', 'tritonlens.benchKernel'];
/** Commands a hover's `command:` links may run. */
export const TRUSTED_COMMANDS = ['tritonlens.showIr', ...SERVER_COMMANDS];

export interface ExecuteCommandParams {
  command: string;
  arguments: unknown[];
}

/**
 * `workspace/executeCommand` params for a server command: the arguments VS Code passed to our registered
 * command (a code lens's `arguments`, spread) go to the server unchanged.
 */
export function executeCommandParams(command: string, args: unknown[]): ExecuteCommandParams {
  return { command, arguments: args };
}
