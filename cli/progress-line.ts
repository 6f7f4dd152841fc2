/**
 * A live status line on stderr: redrawn in place on a terminal, printed as a plain line every few seconds
 * when stderr is a file or a pipe (a log should not fill with carriage returns).
 */

/** Options of {@link ProgressLine}. */
export interface ProgressLineOptions {
  /** @default process.stderr */
  stream?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Redraw on a terminal at most this often. @default 250 */
  redrawMs?: number;
  /** Print a line this often when stderr is not a terminal. @default 5000 */
  plainEveryMs?: number;
}

export class ProgressLine {
  private readonly stream: NodeJS.WritableStream & { isTTY?: boolean };
  private readonly tty: boolean;
  private readonly timer: NodeJS.Timeout;
  private shown = false;
  private paused = false;
  private readonly render: () => string;

  /** @param render the current status, called at every redraw */
  constructor(render: () => string, options: ProgressLineOptions = {}) {
    this.render = render;
    this.stream = options.stream ?? process.stderr;
    this.tty = this.stream.isTTY === true;
    const every = this.tty ? (options.redrawMs ?? 250) : (options.plainEveryMs ?? 5000);
    this.timer = setInterval(() => this.draw(), every);
    this.timer.unref();
  }

  /** Prints a message above the status line (which is redrawn after it). */
  note(message: string): void {
    this.clear();
    this.stream.write(`${message}\n`);
    if (this.tty && !this.paused) this.draw();
  }

  /** Stops redrawing, e.g. while a question is asked; {@link resume} starts again. */
  pause(): void {
    this.clear();
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  /** Removes the status line for good. */
  stop(): void {
    clearInterval(this.timer);
    this.clear();
    this.paused = true;
  }

  private draw(): void {
    if (this.paused) return;
    if (this.tty) {
      this.stream.write(`\r${this.render()}\x1b[K`);
      this.shown = true;
    } else {
      this.stream.write(`${this.render()}\n`);
    }
  }

  private clear(): void {
    if (this.tty && this.shown) this.stream.write('\r\x1b[K');
    this.shown = false;
  }
}
