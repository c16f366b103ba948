import { COLORS, line, text } from './svg.js';

/** A plot area: where it sits on the page, and the time and value ranges it shows. */
export interface Frame {
  readonly left: number;
  readonly top: number;
  readonly width: number;
  readonly height: number;
  readonly fromMs: number;
  readonly toMs: number;
  readonly yMax: number;
}

export function xOf(frame: Frame, ms: number): number {
  return frame.left + ((ms - frame.fromMs) / (frame.toMs - frame.fromMs)) * frame.width;
}

export function yOf(frame: Frame, value: number): number {
  return frame.top + frame.height - (value / frame.yMax) * frame.height;
}

/** Horizontal grid lines every `step`, labelled on the left. */
export function valueGrid(frame: Frame, step: number): string[] {
  const parts: string[] = [];
  for (let value = 0; value <= frame.yMax; value += step) {
    const y = yOf(frame, value);
    parts.push(line(frame.left, y, frame.left + frame.width, y, { stroke: COLORS.grid }));
    parts.push(
      text(frame.left - 6, y + 4, String(value), { 'text-anchor': 'end', fill: COLORS.muted }),
    );
  }
  return parts;
}

/** The time axis: a baseline, a tick every `stepMs` and, if asked, labels in seconds. */
export function timeAxis(frame: Frame, stepMs: number, withLabels: boolean, below = 0): string[] {
  const base = frame.top + frame.height;
  const parts = [line(frame.left, base, frame.left + frame.width, base)];
  for (let ms = frame.fromMs; ms <= frame.toMs; ms += stepMs) {
    const x = xOf(frame, ms);
    parts.push(line(x, base, x, base + 4));
    if (withLabels) {
      const label = `${Number((ms / 1000).toFixed(2))} s`;
      parts.push(
        text(x, base + below + 16, label, { 'text-anchor': 'middle', fill: COLORS.muted }),
      );
    }
  }
  return parts;
}

/** Faint vertical lines at the given times, e.g. where fixed windows start. */
export function timeMarks(frame: Frame, times: readonly number[], dashed = false): string[] {
  return times.map((ms) =>
    line(xOf(frame, ms), frame.top, xOf(frame, ms), frame.top + frame.height, {
      stroke: dashed ? COLORS.axis : COLORS.grid,
      'stroke-dasharray': dashed ? '4 4' : undefined,
    }),
  );
}
