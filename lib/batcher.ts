/**
 * Coalesce concurrent single-row writes into multi-row statements: commits are
 * the scarce resource on the hot paths (one fsync each), so under load the
 * items that arrive while `lanes` batches are running wait and go together in
 * the next one. An idle batcher runs at the end of the current turn of the
 * event loop (setImmediate), so items added in one burst (a relay pass, a loop
 * over contacts) go as one batch, and a lone item waits for nothing else.
 * When a batch of several fails, each item is retried alone, so one bad item
 * fails only its own caller.
 *
 * Lanes: the hot-path stages run one (measured on the events chain, 2 cores:
 * one lane each gave 1,050–1,300 scored events/s where four gave 740–910).
 * The stages already share the database's cores, and while a stage's one
 * statement runs its next batch grows, so more lanes mostly buy more, smaller
 * statements. A stage whose batch may wait on a lock keeps a second lane, so
 * one held contact does not stall it.
 */
export class MicroBatcher<I, O> {
  private pending: Array<{ item: I; resolve: (out: O) => void; reject: (err: unknown) => void }> = [];
  private running = 0;
  private scheduled = false;

  constructor(
    private readonly run: (items: I[]) => Promise<O[]>,
    private readonly opts: { maxBatch: number; lanes: number },
  ) {}

  add(item: I): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      // Busy lanes take the pending items as they finish; an idle batcher waits out this turn's burst.
      if (this.scheduled || this.running >= this.opts.lanes) return;
      this.scheduled = true;
      setImmediate(() => {
        this.scheduled = false;
        this.drain();
      });
    });
  }

  private drain(): void {
    while (this.running < this.opts.lanes && this.pending.length > 0) {
      const batch = this.pending.splice(0, this.opts.maxBatch);
      this.running++;
      this.runBatch(batch).finally(() => {
        this.running--;
        this.drain();
      });
    }
  }

  private async runBatch(batch: MicroBatcher<I, O>["pending"]): Promise<void> {
    try {
      const out = await this.run(batch.map((b) => b.item));
      batch.forEach((b, i) => b.resolve(out[i]));
    } catch (err) {
      if (batch.length === 1) {
        batch[0].reject(err);
        return;
      }
      for (const b of batch) {
        await this.run([b.item]).then((out) => b.resolve(out[0]), b.reject);
      }
    }
  }
}
