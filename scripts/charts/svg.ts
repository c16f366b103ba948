/** Small helpers to write SVG by hand: elements as strings, numbers rounded so output is stable. */

export const COLORS = {
  allowed: '#2e7d32',
  rejected: '#d32f2f',
  line: '#1565c0',
  limit: '#6d4c41',
  axis: '#455a64',
  grid: '#e0e0e0',
  text: '#212121',
  muted: '#616161',
} as const;

const FONT = 'system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif';

type Attributes = Record<string, string | number | undefined>;

/** One decimal is finer than a pixel and keeps float noise out of the files. */
export function num(value: number): string {
  return String(Math.round(value * 10) / 10);
}

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;');
}

export function element(tag: string, attributes: Attributes, children: string[] = []): string {
  const attrs = Object.entries(attributes)
    .filter(([, value]) => value !== undefined)
    .map(
      ([name, value]) => ` ${name}="${typeof value === 'number' ? num(value) : escapeXml(value!)}"`,
    )
    .join('');
  if (children.length === 0) return `<${tag}${attrs}/>`;
  return `<${tag}${attrs}>${children.join('')}</${tag}>`;
}

export function text(x: number, y: number, content: string, attributes: Attributes = {}): string {
  return element('text', { x, y, fill: COLORS.text, 'font-size': 12, ...attributes }, [
    escapeXml(content),
  ]);
}

export function line(x1: number, y1: number, x2: number, y2: number, attributes: Attributes = {}) {
  return element('line', { x1, y1, x2, y2, stroke: COLORS.axis, ...attributes });
}

export function rect(x: number, y: number, width: number, height: number, fill: string) {
  return element('rect', { x, y, width, height, fill });
}

/** A legend entry: a swatch drawn as `shape` (square, line, dashed line or tick), then a label. */
export function legendEntry(
  x: number,
  y: number,
  color: string,
  label: string,
  shape: 'square' | 'line' | 'dashed' | 'tick' = 'square',
): string {
  const swatch =
    shape === 'square'
      ? rect(x, y - 9, 10, 10, color)
      : shape === 'tick'
        ? line(x + 5, y - 10, x + 5, y + 1, { stroke: color, 'stroke-width': 2 })
        : line(x, y - 4, x + 18, y - 4, {
            stroke: color,
            'stroke-width': 2,
            'stroke-dasharray': shape === 'dashed' ? '5 3' : undefined,
          });
  return swatch + text(x + (shape === 'square' || shape === 'tick' ? 16 : 24), y, label);
}

/** The whole document: a white background, so the chart reads the same on dark pages. */
export function svgDocument(
  width: number,
  height: number,
  title: string,
  description: string,
  body: string[],
): string {
  const root = element(
    'svg',
    {
      xmlns: 'http://www.w3.org/2000/svg',
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'img',
      'font-family': FONT,
    },
    [
      element('title', {}, [escapeXml(title)]),
      element('desc', {}, [escapeXml(description)]),
      rect(0, 0, width, height, '#ffffff'),
      ...body,
    ],
  );
  // One element per line keeps diffs of regenerated charts readable.
  return `${root.replace(/></g, '>\n<')}\n`;
}
