// How the server's diagnostics are shown in VS Code. No VS Code calls here.

/** The part of a diagnostic this module reads: its related locations (source lines and IR lines a finding names). */
export interface WithRelatedInformation {
  relatedInformation?: { location: { uri: { toString(): string } }; message: string }[];
}

/** Whether a related location is a line of the checked Python source (the spill code, the mask, the launch) rather
 * than a line of the compiler's IR in tritonlens's cache. */
function isSourceLine(r: { location: { uri: { toString(): string } } }): boolean {
  return r.location.uri.toString().endsWith('.py');
}

/**
 * Keeps every related source line of each diagnostic (the lines the finding names: spill code, the same mask, the
 * launch), and of its IR lines the first, its message saying how many there were. VS Code puts a diagnostic's hover
 * (message and one line per related location) above the server's hover, so eight `ld.global` lines pushed the IR
 * summary of the line below the fold; the summary links every IR line, and the Show PTX/SASS commands open them
 * highlighted. Other LSP clients get the full list from the server.
 */
export function compactRelatedInformation<D extends WithRelatedInformation>(diagnostics: D[]): D[] {
  for (const d of diagnostics) {
    const related = d.relatedInformation;
    if (!related) {
      continue;
    }
    const ir = related.filter((r) => !isSourceLine(r));
    if (ir.length > 1) {
      const first = ir[0];
      first.message = `${first.message} (first of ${ir.length} IR lines)`;
      d.relatedInformation = related.filter((r) => isSourceLine(r) || r === first);
    }
  }
  return diagnostics;
}
