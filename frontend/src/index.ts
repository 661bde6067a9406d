/**
 * The notebook side of codingcode-jupyter.
 *
 * The agent lives in the kernel; this extension is its hands in the live document. When the
 * kernel needs the notebook it opens a short-lived comm on PING_TARGET; every page with this
 * extension answers by opening a comm of its own on TARGET (or by saying hello again on the one
 * it has), so a page without the extension, which closes unknown comms, never closes ours, and
 * several pages on one kernel each have their channel. The kernel addresses one page by its
 * client id. Requests are few: read the live cells, propose changes (applied at once, or shown on
 * the cells with Accept / Reject), write outputs into a cell, cancel a review.
 *
 * Decisions stay in the kernel: this code renders review controls and relays edits through the
 * notebook's shared model, so with real-time collaboration they travel like a person's typing.
 */
import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { Kernel, KernelMessage } from '@jupyterlab/services';
import { ReviewSession, applyChange, Change, ChangeResult } from './review';
import { readNotebook, setOutputs } from './cells';
import { watchCutOff } from './cutoff';

export const TARGET = 'codingcode.notebook';
export const PING_TARGET = 'codingcode.notebook.ping';
const PROTOCOL = 1;

type Json = any; // eslint-disable-line @typescript-eslint/no-explicit-any

interface Request {
  type: 'request';
  id: string;
  to: string;
  op: 'read' | 'propose' | 'set_outputs' | 'cancel';
  [key: string]: Json;
}

function clientId(): string {
  return Math.random().toString(36).slice(2) + Date.now().toString(36);
}

/** One comm between one notebook page and its kernel. */
class Channel {
  private readonly client = clientId();
  private readonly reviews = new Map<string, ReviewSession>();

  constructor(
    private readonly panel: NotebookPanel,
    private readonly comm: Kernel.IComm
  ) {
    comm.onMsg = msg => this.onMessage(msg);
    comm.onClose = () => this.closeAll();
    panel.disposed.connect(() => this.closeAll());
    comm.open(this.hello());
  }

  get open(): boolean {
    return !this.comm.isDisposed;
  }

  hello(): Json {
    return {
      type: 'hello',
      protocol: PROTOCOL,
      client: this.client,
      path: this.panel.context.path,
      focused: document.hasFocus() && !document.hidden,
      visible: this.panel.isVisible,
      dirty: this.panel.context.model.dirty
    };
  }

  sayHello(): void {
    this.comm.send(this.hello());
  }

  private onMessage(msg: KernelMessage.ICommMsgMsg): void {
    const data = msg.content.data as unknown as Request;
    if (!data || data.type !== 'request' || data.to !== this.client) {
      return; // another page of the same kernel was chosen
    }
    void this.handle(data).then(
      result => this.reply(data.id, true, result),
      error => this.reply(data.id, false, String(error?.message ?? error))
    );
  }

  private reply(id: string, ok: boolean, payload: Json): void {
    if (this.comm.isDisposed) {
      return;
    }
    this.comm.send(ok ? { type: 'reply', id, ok, result: payload } : { type: 'reply', id, ok, error: payload });
  }

  private async handle(request: Request): Promise<Json> {
    const notebook = this.panel.content;
    switch (request.op) {
      case 'read':
        return readNotebook(this.panel);
      case 'set_outputs':
        setOutputs(notebook, request.cell_id, request.outputs, request.execution_count);
        return { ok: true };
      case 'cancel': {
        const review = this.reviews.get(request.request);
        review?.cancel(request.reason ?? 'cancelled');
        return { cancelled: review !== undefined };
      }
      case 'propose': {
        const changes = request.changes as Change[];
        if (!request.review) {
          const results: ChangeResult[] = changes.map(change => applyChange(notebook, change));
          return { results };
        }
        const review = new ReviewSession(this.panel, changes, request.title ?? 'The agent proposes changes', event =>
          this.comm.send({ type: 'answer', request: request.id, ...event })
        );
        this.reviews.set(request.id, review);
        try {
          return { results: await review.done };
        } finally {
          this.reviews.delete(request.id);
        }
      }
      default:
        throw new Error(`unknown request ${String(request.op)}`);
    }
  }

  private closeAll(): void {
    for (const review of this.reviews.values()) {
      review.cancel('the connection to the kernel closed');
    }
    this.reviews.clear();
  }
}

function watch(panel: NotebookPanel): void {
  let channel: Channel | null = null;
  const register = (kernel: Kernel.IKernelConnection | null | undefined) => {
    channel = null;
    kernel?.registerCommTarget(PING_TARGET, (ping: Kernel.IComm) => {
      try {
        if (channel && channel.open) {
          channel.sayHello();
        } else {
          channel = new Channel(panel, kernel.createComm(TARGET));
        }
      } catch (error) {
        console.error('codingcode-jupyter: could not answer the kernel', error);
      }
      ping.close();
    });
  };
  register(panel.sessionContext.session?.kernel);
  panel.sessionContext.kernelChanged.connect((_, change) => register(change.newValue));
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'codingcode-jupyter:notebook-edits',
  description: 'Lets the agent in the kernel read the live notebook and propose cell edits, reviewed cell by cell.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(watch);
    tracker.widgetAdded.connect((_, panel) => watch(panel));
    // Agent turns cut off by a kernel restart show what they became, not dead buttons.
    tracker.forEach(watchCutOff);
    tracker.widgetAdded.connect((_, panel) => watchCutOff(panel));
    // A marker the browser tests (and a curious person) can read: the extension is active.
    document.body.dataset.codingcodeNotebook = String(PROTOCOL);
  }
};

export default plugin;
