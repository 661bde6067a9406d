/** A line diff for the review bar: longest common subsequence, small inputs only. */

export interface DiffLine {
  kind: 'same' | 'add' | 'del';
  text: string;
}

// Past this many lines on either side, the bar shows the old and the new source whole
// rather than spend quadratic time and memory in the browser.
const MAX_LINES = 1500;

export function lineDiff(before: string, after: string): DiffLine[] {
  const a = before.split('\n');
  const b = after.split('\n');
  if (a.length > MAX_LINES || b.length > MAX_LINES) {
    return [...a.map(text => ({ kind: 'del' as const, text })), ...b.map(text => ({ kind: 'add' as const, text }))];
  }
  const n = a.length;
  const m = b.length;
  const table: Uint16Array[] = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      table[i][j] = a[i] === b[j] ? table[i + 1][j + 1] + 1 : Math.max(table[i + 1][j], table[i][j + 1]);
    }
  }
  const lines: DiffLine[] = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (a[i] === b[j]) {
      lines.push({ kind: 'same', text: a[i] });
      i++;
      j++;
    } else if (table[i + 1][j] >= table[i][j + 1]) {
      lines.push({ kind: 'del', text: a[i++] });
    } else {
      lines.push({ kind: 'add', text: b[j++] });
    }
  }
  while (i < n) {
    lines.push({ kind: 'del', text: a[i++] });
  }
  while (j < m) {
    lines.push({ kind: 'add', text: b[j++] });
  }
  return lines;
}
