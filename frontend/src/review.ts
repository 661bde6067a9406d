/**
 * Proposed cell changes: applied at once when the kernel's approval allowed them, or shown on
 * the cells with Accept / Reject (and Accept all / Reject all for the request) when it asked.
 *
 * A replacement, a move and a deletion touch the document only when accepted; a new cell is
 * inserted at once, marked as proposed, and removed again when rejected. So rejecting leaves
 * every other cell exactly as it is, whatever the person typed meanwhile.
 */
import { Notebook, NotebookPanel } from '@jupyterlab/notebook';
import { findIndex } from './cells';
import { lineDiff } from './diff';

export type Answer = 'applied' | 'accepted' | 'rejected' | 'conflict' | 'cancelled';

export interface Change {
  change: string;
  kind: 'replace' | 'insert' | 'delete' | 'move';
  /** replace, delete, move: the cell; insert: the anchor (none: at the end). */
  cell_id?: string | null;
  /** insert: 'after' (default) or 'before' the anchor. */
  position?: 'after' | 'before';
  /** replace, delete: the source the proposal was made from; a different one is a conflict. */
  expected_source?: string | null;
  source?: string;
  cell_type?: 'code' | 'markdown' | 'raw';
  /** move: the index the cell ends at. */
  to_index?: number;
  /** insert without an anchor: the index it lands at (undoing a deletion); none: at the end. */
  index?: number;
  /** insert (undoing a deletion): the cell's own id, so the agent's next edit by id still finds it. */
  id?: string;
  /** insert, replace (undoing one): the outputs and execution count the cell had, restored with it. */
  outputs?: Json[];
  execution_count?: number | null;
  metadata?: Json;
}

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface ChangeResult {
  change: string;
  answer: Answer;
  cell_id?: string;
  index?: number;
  /** What was there before (replace, delete), so the kernel can undo. */
  before?: string;
  /** replace, delete: the whole cell before (its id, outputs, execution count, metadata), for undo. */
  before_cell?: Json;
  cell_type?: string;
  note?: string;
}

/** The note a conflict shows on its cell, and tells the agent. */
export const CONFLICT_NOTE = 'the cell changed since the agent read it (the person edited it); read the notebook again';

function sourceOf(notebook: Notebook, index: number): string {
  return notebook.model!.cells.get(index).sharedModel.getSource();
}

function locate(notebook: Notebook, change: Change): number | ChangeResult {
  const index = change.cell_id ? findIndex(notebook, change.cell_id) : -1;
  if (index < 0) {
    return { change: change.change, answer: 'conflict', note: `no cell with id ${change.cell_id ?? '(none)'}` };
  }
  if (change.expected_source !== undefined && change.expected_source !== null) {
    if (sourceOf(notebook, index) !== change.expected_source) {
      return {
        change: change.change,
        answer: 'conflict',
        cell_id: change.cell_id ?? undefined,
        index,
        note: CONFLICT_NOTE
      };
    }
  }
  return index;
}

/** Where an insertion lands: after (or before) its anchor, after earlier insertions at the same anchor. */
function insertIndex(notebook: Notebook, change: Change, lastAt: Map<string, string>): number | ChangeResult {
  const count = notebook.model!.cells.length;
  if (!change.cell_id) {
    return change.index === undefined || change.index === null ? count : Math.max(0, Math.min(count, change.index));
  }
  const anchor = lastAt.get(change.cell_id) ?? change.cell_id;
  const index = findIndex(notebook, anchor);
  if (index < 0) {
    return { change: change.change, answer: 'conflict', note: `no cell with id ${change.cell_id}` };
  }
  return change.position === 'before' && !lastAt.has(change.cell_id) ? index : index + 1;
}

function insertCell(notebook: Notebook, change: Change, index: number): string {
  const shared = notebook.model!.sharedModel;
  const cell: Json = { cell_type: change.cell_type ?? 'code', source: change.source ?? '' };
  // Undoing a deletion puts the cell back as it was: its id (unless another cell has it now), outputs, count.
  if (change.id && findIndex(notebook, change.id) < 0) {
    cell.id = change.id;
  }
  if (change.metadata) {
    cell.metadata = change.metadata;
  }
  if (cell.cell_type === 'code') {
    cell.outputs = change.outputs ?? [];
    cell.execution_count = change.execution_count ?? null;
  }
  shared.insertCell(index, cell);
  return notebook.model!.cells.get(index).id;
}

/** Apply one change at once (the approval allowed it without review). */
export function applyChange(notebook: Notebook, change: Change, lastAt = new Map<string, string>()): ChangeResult {
  const shared = notebook.model!.sharedModel;
  if (change.kind === 'insert') {
    const index = insertIndex(notebook, change, lastAt);
    if (typeof index !== 'number') {
      return index;
    }
    const id = insertCell(notebook, change, index);
    if (change.cell_id) {
      lastAt.set(change.cell_id, id);
    }
    return { change: change.change, answer: 'applied', cell_id: id, index };
  }
  const index = locate(notebook, change);
  if (typeof index !== 'number') {
    return index;
  }
  const cell = notebook.model!.cells.get(index);
  const before = cell.sharedModel.getSource();
  const beforeCell = cell.sharedModel.toJSON();
  if (change.kind === 'replace') {
    cell.sharedModel.setSource(change.source ?? '');
    if (change.outputs !== undefined && cell.type === 'code') {
      // Undoing an edit: the outputs the cell had before it, not those of the agent's run since.
      const code = cell.sharedModel as Json;
      code.setOutputs(change.outputs);
      code.execution_count = change.execution_count ?? null;
    }
  } else if (change.kind === 'delete') {
    shared.deleteCell(index);
  } else {
    const last = notebook.model!.cells.length - 1;
    shared.moveCell(index, Math.max(0, Math.min(last, change.to_index ?? index)));
  }
  return {
    change: change.change,
    answer: 'applied',
    cell_id: cell.id,
    index,
    before,
    before_cell: beforeCell,
    cell_type: cell.type
  };
}

function button(label: string, kind: string, onClick: () => void): HTMLButtonElement {
  const element = document.createElement('button');
  element.className = `cc-review-button cc-review-${kind}`;
  element.textContent = label;
  element.addEventListener('click', event => {
    event.preventDefault();
    event.stopPropagation();
    onClick();
  });
  return element;
}

function text(tag: string, className: string, content: string): HTMLElement {
  const element = document.createElement(tag);
  element.className = className;
  element.textContent = content;
  return element;
}

interface Pending {
  change: Change;
  /** insert: the id of the proposed cell now in the document. */
  insertedId?: string;
  bar?: HTMLElement;
  accept?: HTMLButtonElement;
  /** replace: the diff shown, redrawn as the person types in the cell. */
  diff?: HTMLElement;
  /** replace, delete: what the bar says when the cell no longer holds what the agent read. */
  conflict?: HTMLElement;
  /** Stops following the cell's typing. */
  unwatch?: () => void;
  result?: ChangeResult;
}

const CONFLICT_LIVE =
  'You changed this cell since the agent read it: accepting would overwrite your typing, so Accept is off. ' +
  'Reject keeps your text (the agent is told and reads the cell again).';
const CONFLICT_SETTLED =
  'Not applied: this cell changed since the agent read it. Your text is kept; the agent was told and reads it again.';

/** One request's proposals on the page, until each is answered. */
export class ReviewSession {
  readonly done: Promise<ChangeResult[]>;
  private resolve!: (results: ChangeResult[]) => void;
  private readonly pending: Pending[];
  private readonly banner: HTMLElement;

  constructor(
    private readonly panel: NotebookPanel,
    changes: Change[],
    title: string,
    private readonly emit: (event: ChangeResult) => void
  ) {
    this.done = new Promise(resolve => (this.resolve = resolve));
    const notebook = panel.content;
    const lastAt = new Map<string, string>();
    this.pending = changes.map(change => {
      const item: Pending = { change };
      if (change.kind === 'insert') {
        const index = insertIndex(notebook, change, lastAt);
        if (typeof index !== 'number') {
          item.result = index;
          return item;
        }
        item.insertedId = insertCell(notebook, change, index);
        if (change.cell_id) {
          lastAt.set(change.cell_id, item.insertedId);
        }
      } else {
        const located = locate(notebook, change);
        if (typeof located !== 'number') {
          item.result = located;
        }
      }
      return item;
    });
    this.banner = this.renderBanner(title);
    // Cells render after the model changes: attach the bars on the next frame.
    requestAnimationFrame(() => this.renderBars());
    this.finishIfDone();
  }

  private cellNode(id: string | undefined | null): HTMLElement | null {
    if (!id) {
      return null;
    }
    const widget = this.panel.content.widgets.find(cell => cell.model.id === id);
    return widget ? widget.node : null;
  }

  private renderBanner(title: string): HTMLElement {
    const banner = document.createElement('div');
    banner.className = 'cc-review-banner';
    banner.appendChild(text('span', 'cc-review-title', title));
    banner.appendChild(button('Accept all', 'accept', () => this.answerAll(true)));
    banner.appendChild(button('Reject all', 'reject', () => this.answerAll(false)));
    // At the top of the scrolling notebook, sticky: in view whichever cell the person scrolled to.
    this.panel.content.node.prepend(banner);
    return banner;
  }

  private renderBars(): void {
    for (const item of this.pending) {
      if (item.result) {
        continue;
      }
      const change = item.change;
      const node = this.cellNode(change.kind === 'insert' ? item.insertedId : change.cell_id);
      const bar = document.createElement('div');
      bar.className = `cc-review-bar cc-review-${change.kind}`;
      bar.dataset.change = change.change;
      const label = {
        replace: 'The agent proposes to change this cell',
        insert: 'The agent proposes this new cell',
        delete: 'The agent proposes to delete this cell',
        move: `The agent proposes to move this cell to position ${(change.to_index ?? 0) + 1}`
      }[change.kind];
      bar.appendChild(text('span', 'cc-review-label', label));
      bar.appendChild(button('Accept', 'accept', () => this.answer(item, true)));
      bar.appendChild(button('Reject', 'reject', () => this.answer(item, false)));
      item.accept = bar.querySelector('.cc-review-accept') as HTMLButtonElement;
      if (change.kind === 'replace' || change.kind === 'delete') {
        item.conflict = text('div', 'cc-review-conflict-note', CONFLICT_LIVE);
        bar.appendChild(item.conflict);
        this.watch(item);
      }
      item.bar = bar;
      this.refresh(item);
      if (node) {
        node.classList.add(`cc-proposed-${change.kind}`);
        node.insertBefore(bar, node.firstChild);
      } else {
        this.banner.appendChild(bar);
      }
    }
  }

  /** Follow the person's typing in the cell a replacement or deletion names: the diff and the conflict stay true. */
  private watch(item: Pending): void {
    const index = findIndex(this.panel.content, item.change.cell_id ?? '');
    if (index < 0) {
      return;
    }
    const shared = this.panel.content.model!.cells.get(index).sharedModel;
    const changed = () => this.refresh(item);
    shared.changed.connect(changed);
    item.unwatch = () => shared.changed.disconnect(changed);
  }

  private refresh(item: Pending): void {
    const change = item.change;
    if (item.result || !item.bar) {
      return;
    }
    const index = findIndex(this.panel.content, change.cell_id ?? '');
    const current = index >= 0 ? sourceOf(this.panel.content, index) : '';
    if (change.kind === 'replace') {
      const diff = renderDiff(current, change.source ?? '');
      if (item.diff) {
        item.diff.replaceWith(diff);
      } else {
        item.bar.appendChild(diff);
      }
      item.diff = diff;
    }
    const expected = change.expected_source;
    const conflict = expected !== undefined && expected !== null && current !== expected;
    item.bar.classList.toggle('cc-review-conflict', conflict);
    if (item.accept) {
      item.accept.disabled = conflict;
      item.accept.title = conflict ? CONFLICT_LIVE : '';
    }
  }

  private answer(item: Pending, accept: boolean): void {
    if (item.result) {
      return;
    }
    const notebook = this.panel.content;
    const change = item.change;
    let result: ChangeResult;
    if (change.kind === 'insert') {
      if (accept) {
        result = { change: change.change, answer: 'accepted', cell_id: item.insertedId };
      } else {
        const index = findIndex(notebook, item.insertedId ?? '');
        if (index >= 0) {
          notebook.model!.sharedModel.deleteCell(index);
        }
        result = { change: change.change, answer: 'rejected' };
      }
    } else if (accept) {
      const applied = applyChange(notebook, change);
      result = applied.answer === 'applied' ? { ...applied, answer: 'accepted' } : applied;
    } else {
      result = { change: change.change, answer: 'rejected', cell_id: change.cell_id ?? undefined };
    }
    this.settle(item, result);
  }

  private settle(item: Pending, result: ChangeResult): void {
    item.result = result;
    item.unwatch?.();
    item.bar?.remove();
    const node = this.cellNode(item.insertedId ?? item.change.cell_id);
    node?.classList.remove(`cc-proposed-${item.change.kind}`);
    if (result.answer === 'conflict' && node) {
      showConflict(node);
    }
    this.emit(result);
    this.finishIfDone();
  }

  private answerAll(accept: boolean): void {
    for (const item of this.pending) {
      this.answer(item, accept);
    }
  }

  /** The turn ended without answers (interrupted, the kernel went away): reject what is left. */
  cancel(reason: string): void {
    for (const item of this.pending) {
      if (!item.result) {
        this.answer(item, false);
        item.result = { ...item.result!, answer: 'cancelled', note: reason };
      }
    }
    this.finishIfDone();
  }

  private finishIfDone(): void {
    if (this.pending.every(item => item.result)) {
      this.banner.remove();
      this.resolve(this.pending.map(item => item.result!));
    }
  }
}

/** What stays on a cell whose proposal was answered with a conflict, until the person closes it. */
function showConflict(node: HTMLElement): void {
  node.querySelector(':scope > .cc-review-conflict-settled')?.remove();
  const note = document.createElement('div');
  note.className = 'cc-review-conflict-settled';
  note.appendChild(text('span', 'cc-review-label', CONFLICT_SETTLED));
  note.appendChild(button('OK', 'dismiss', () => note.remove()));
  node.insertBefore(note, node.firstChild);
}

function renderDiff(before: string, after: string): HTMLElement {
  const block = document.createElement('pre');
  block.className = 'cc-review-diff';
  for (const line of lineDiff(before, after)) {
    const row = text('div', `cc-diff-${line.kind}`, `${line.kind === 'add' ? '+' : line.kind === 'del' ? '-' : ' '} ${line.text}`);
    block.appendChild(row);
  }
  return block;
}
