/**
 * At most `max` tasks at once; the others wait their turn, first come first
 * served. A finishing task hands its place straight to the next waiter, so
 * a newcomer can never slip in between and exceed the limit. For a remote
 * API's published concurrency limit, shared by everything in the process
 * that calls it.
 */
export class Semaphore {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(readonly max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError("max must be a positive integer");
  }

  /** Tasks running now. */
  get running(): number {
    return this.active;
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active < this.max) this.active++;
    else await new Promise<void>((resolve) => this.waiting.push(resolve));
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }
}
