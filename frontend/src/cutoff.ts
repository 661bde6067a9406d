/**
 * Agent turns cut off by a kernel restart.
 *
 * A `%%agent` cell's output is a widget view while its turn runs, with a text/html fallback
 * that says the turn was cut off (the kernel writes it beside the view; its element carries the
 * class CUT_OFF_CLASS). When the kernel goes away mid-turn the view's model goes with it:
 * buttons left on the page would do nothing, and the saved notebook would show "Error
 * displaying widget: model not found" when opened again. So:
 *
 * - when this page sees its kernel restart (or die, or change), each such output becomes static
 *   HTML: the fallback's notice above what the view showed until then, without its buttons;
 * - when a notebook is opened, such an output whose widget model the kernel does not hold (asked
 *   with a comm_info request, as the widget manager itself restores views) keeps only its
 *   fallback. A view whose model is still alive (a page reloaded during a turn) is left alone.
 */
import { ICodeCellModel, CodeCell } from '@jupyterlab/cells';
import { NotebookPanel } from '@jupyterlab/notebook';
import { Kernel } from '@jupyterlab/services';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

export const WIDGET_MIME = 'application/vnd.jupyter.widget-view+json';
const CUT_OFF_CLASS = 'codingcode-cut-off';
const WIDGET_TARGET = 'jupyter.widget';

interface Found {
  cell: ICodeCellModel;
  index: number;
  output: Json;
  modelId: string;
}

/** Our live outputs: a widget view with the kernel's cut-off fallback beside it. */
function liveOutputs(panel: NotebookPanel): Found[] {
  const found: Found[] = [];
  const cells = panel.content.model?.cells;
  if (!cells) {
    return found;
  }
  for (let c = 0; c < cells.length; c++) {
    const cell = cells.get(c);
    if (cell.type !== 'code') {
      continue;
    }
    const code = cell as ICodeCellModel;
    for (let index = 0; index < code.outputs.length; index++) {
      const output = code.outputs.get(index).toJSON() as Json;
      const data = output?.data ?? {};
      const html = data['text/html'];
      const text = Array.isArray(html) ? html.join('') : String(html ?? '');
      const view = data[WIDGET_MIME];
      if (view && typeof view.model_id === 'string' && text.includes(CUT_OFF_CLASS)) {
        found.push({ cell: code, index, output, modelId: view.model_id });
      }
    }
  }
  return found;
}

function withoutView(output: Json, html?: string): Json {
  const data = { ...output.data };
  delete data[WIDGET_MIME];
  if (html !== undefined) {
    data['text/html'] = html;
  }
  return { ...output, data };
}

/** What the view shows now, as static HTML without its controls; '' when it is not rendered. */
function snapshot(panel: NotebookPanel, found: Found): string {
  const widget = panel.content.widgets.find(cell => cell.model === found.cell) as CodeCell | undefined;
  const child = widget?.outputArea?.widgets[found.index];
  const root = child?.node.querySelector('.codingcode-cell');
  if (!root) {
    return '';
  }
  const copy = root.cloneNode(true) as HTMLElement;
  // Nothing in the copy can act any more: buttons, inputs and the running clock go.
  copy.querySelectorAll('button, input, select, textarea, .codingcode-stop, .codingcode-thinking').forEach(node =>
    node.remove()
  );
  copy.classList.add('cc-cut-off-snapshot');
  return copy.outerHTML;
}

/** The kernel went away: each live output of ours becomes its fallback notice over what it showed. */
export function freezeLiveOutputs(panel: NotebookPanel): number {
  const found = liveOutputs(panel);
  // Snapshots first: replacing one output re-renders its cell's outputs.
  const frozen = found.map(item => {
    const data = item.output.data ?? {};
    const fallback = Array.isArray(data['text/html']) ? data['text/html'].join('') : String(data['text/html']);
    return { item, html: fallback + snapshot(panel, item) };
  });
  for (const { item, html } of frozen) {
    item.cell.outputs.set(item.index, withoutView(item.output, html));
  }
  return frozen.length;
}

/** Drop the view of our outputs whose model the kernel does not hold: their fallback shows instead. */
export async function dropOrphanViews(panel: NotebookPanel, kernel: Kernel.IKernelConnection): Promise<number> {
  // Only outputs present before asking: a view displayed after the question has a model the
  // answer may not list yet.
  const before = liveOutputs(panel);
  if (before.length === 0) {
    return 0;
  }
  const reply = await kernel.requestCommInfo({ target_name: WIDGET_TARGET });
  const content = reply.content as Json;
  if (content.status !== 'ok') {
    return 0;
  }
  const alive = new Set(Object.keys(content.comms ?? {}));
  let dropped = 0;
  for (const item of liveOutputs(panel)) {
    if (alive.has(item.modelId) || !before.some(old => old.modelId === item.modelId)) {
      continue;
    }
    item.cell.outputs.set(item.index, withoutView(item.output));
    dropped++;
  }
  return dropped;
}

/** Watch one notebook page: freeze on a restart, drop orphan views whenever a kernel is ready. */
export function watchCutOff(panel: NotebookPanel): void {
  const session = panel.sessionContext;
  let checked: Kernel.IKernelConnection | null = null;
  const check = () => {
    const kernel = session.session?.kernel;
    if (!kernel || kernel === checked || kernel.status !== 'idle') {
      return;
    }
    checked = kernel;
    dropOrphanViews(panel, kernel).catch(error => console.warn('codingcode-jupyter: could not check widget views', error));
  };
  session.statusChanged.connect((_, status) => {
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      freezeLiveOutputs(panel);
      checked = null;
    } else if (status === 'idle') {
      check();
    }
  });
  session.kernelChanged.connect((_, change) => {
    if (change.oldValue) {
      freezeLiveOutputs(panel);
    }
    checked = null;
  });
  void panel.context.ready.then(() => session.ready).then(check);
}
