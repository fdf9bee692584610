// How the server's diagnostics are shown in VS Code. No VS Code calls here.

/** The part of a diagnostic this module reads: its related locations (the IR lines a finding rests on). */
export interface WithRelatedInformation {
  relatedInformation?: { message: string }[];
}

/**
 * Keeps the first related location of each diagnostic, its message saying how many there were. VS Code puts a
 * diagnostic's hover (message and one line per related location) above the server's hover, so eight `ld.global`
 * lines pushed the IR summary of the line below the fold; the summary links every IR line, and the Show PTX/SASS
 * commands open them highlighted. Other LSP clients get the full list from the server.
 */
export function compactRelatedInformation<D extends WithRelatedInformation>(diagnostics: D[]): D[] {
  for (const d of diagnostics) {
    const related = d.relatedInformation;
    if (related && related.length > 1) {
      const first = related[0];
      first.message = `${first.message} (first of ${related.length} IR lines)`;
      d.relatedInformation = [first];
    }
  }
  return diagnostics;
}
