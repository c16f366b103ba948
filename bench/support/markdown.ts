/** Markdown tables padded to line up, so the same text reads well on a terminal and on GitHub. */

export type Cell = string | number;

export function table(header: readonly string[], rows: readonly (readonly Cell[])[]): string {
  // A pipe splits a cell even inside a code span unless escaped.
  const text = [header, ...rows].map((row) =>
    row.map((cell) => String(cell).replaceAll('|', '\\|')),
  );
  const widths = header.map((_, c) => Math.max(3, ...text.map((row) => (row[c] ?? '').length)));
  const line = (row: readonly string[]) =>
    `| ${widths.map((w, c) => (row[c] ?? '').padEnd(w)).join(' | ')} |`;
  const rule = `| ${widths.map((w) => '-'.repeat(w)).join(' | ')} |`;
  return [line(text[0]), rule, ...text.slice(1).map(line)].join('\n');
}

export const integer = (n: number) => Math.round(n).toLocaleString('en-US');

export const ms = (n: number) => (Number.isFinite(n) ? n.toFixed(2) : '—');

export const ratio = (n: number) => (Number.isFinite(n) ? `${n.toFixed(2)}×` : '—');

export const fixed = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '—');
