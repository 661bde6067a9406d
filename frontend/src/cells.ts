/** Reading the live notebook and writing a cell's outputs, through the notebook's model. */
import { ICodeCellModel } from '@jupyterlab/cells';
import { Notebook, NotebookPanel } from '@jupyterlab/notebook';

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

// An output value longer than this is replaced by its size: a plot's base64 is for the person's
// eyes, and the kernel keeps its own record of what its cells displayed.
const MAX_VALUE_CHARS = 400_000;

function trimOutput(output: Json): Json {
  if (!output || typeof output !== 'object' || !output.data) {
    return output;
  }
  const data: Json = {};
  for (const [mime, value] of Object.entries(output.data as Record<string, Json>)) {
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    data[mime] = text.length > MAX_VALUE_CHARS ? { omitted_chars: text.length } : value;
  }
  return { ...output, data };
}

export function readNotebook(panel: NotebookPanel): Json {
  const notebook = panel.content;
  const model = notebook.model;
  const cells: Json[] = [];
  if (model) {
    for (let index = 0; index < model.cells.length; index++) {
      const cell = model.cells.get(index);
      const code = cell.type === 'code' ? (cell as ICodeCellModel) : null;
      cells.push({
        id: cell.id,
        index,
        cell_type: cell.type,
        source: cell.sharedModel.getSource(),
        execution_count: code ? code.executionCount : null,
        outputs: code ? (code.outputs.toJSON() as Json[]).map(trimOutput) : []
      });
    }
  }
  const active = notebook.activeCell;
  return {
    path: panel.context.path,
    dirty: panel.context.model.dirty,
    active_index: notebook.activeCellIndex,
    active_cell_id: active ? active.model.id : null,
    cells
  };
}

export function findIndex(notebook: Notebook, cellId: string): number {
  const model = notebook.model;
  if (!model) {
    return -1;
  }
  for (let index = 0; index < model.cells.length; index++) {
    if (model.cells.get(index).id === cellId) {
      return index;
    }
  }
  return -1;
}

export function setOutputs(notebook: Notebook, cellId: string, outputs: Json[], executionCount: number | null): void {
  const index = findIndex(notebook, cellId);
  if (index < 0) {
    throw new Error(`no cell with id ${cellId}`);
  }
  const cell = notebook.model!.cells.get(index);
  if (cell.type !== 'code') {
    throw new Error(`cell ${cellId} is not a code cell`);
  }
  const code = cell as ICodeCellModel;
  code.outputs.clear();
  for (const output of outputs) {
    code.outputs.add(output);
  }
  code.executionCount = executionCount;
}
