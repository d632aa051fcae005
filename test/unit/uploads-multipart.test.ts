import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { receiveMultipartFiles } from "../../lib/uploads";

/** receiveMultipartFiles: a body's fields and files within limits; files past them listed, never refused. */

let dir: string;
let n = 0;
beforeEach(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), "multipart-files-"));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function receive(form: FormData, fieldLimit = 100) {
  const request = new Request("http://multipart.test", { method: "POST", body: form });
  const body = Readable.from([Buffer.from(await request.arrayBuffer())]);
  return receiveMultipartFiles(body, request.headers.get("content-type")!, {
    pathFor: () => path.join(dir, `file-${++n}`),
    maxFiles: 2,
    fileLimit: 10,
    listFiles: 4,
    maxFields: 10,
    fieldLimit,
  });
}

test("the first files within the limit are written; a larger one and those past maxFiles are listed as dropped", async () => {
  const form = new FormData();
  form.append("subject", "Hello");
  form.append("attachment-1", new Blob(["small"], { type: "text/plain" }), "a.txt");
  form.append("attachment-2", new Blob(["far too large"], { type: "text/plain" }), "b.txt");
  form.append("attachment-3", new Blob(["extra"], { type: "image/png" }), "c.png");
  form.append("attachment-4", new Blob(["x"]), "d.bin");
  form.append("attachment-5", new Blob(["not listed"]), "e.bin");
  form.append("sender", "ana@example.com");
  const { fields, files } = await receive(form);
  expect(fields).toEqual({ subject: "Hello", sender: "ana@example.com" });
  expect(files.map(({ field, fileName, size, dropped }) => ({ field, fileName, size, dropped }))).toEqual([
    { field: "attachment-1", fileName: "a.txt", size: 5, dropped: null },
    { field: "attachment-2", fileName: "b.txt", size: 13, dropped: "too_large" },
    { field: "attachment-3", fileName: "c.png", size: 5, dropped: "too_many" },
    { field: "attachment-4", fileName: "d.bin", size: 1, dropped: "too_many" },
  ]);
  expect(files[2].declaredType).toBe("image/png");
  expect(readFileSync(files[0].path!, "utf8")).toBe("small");
  expect(files.slice(1).map((f) => f.path)).toEqual([null, null, null]);
  expect(readdirSync(dir)).toEqual([path.basename(files[0].path!)]);
});

test("a field past its limit is a 400 naming it, and the files written are removed", async () => {
  const form = new FormData();
  form.append("attachment-1", new Blob(["small"]), "a.txt");
  form.append("body-html", "x".repeat(101));
  await expect(receive(form)).rejects.toMatchObject({
    code: 400,
    data: { details: [{ field: "body-html", message: "field body-html is longer than 100 bytes" }] },
  });
  expect(readdirSync(dir)).toEqual([]);
});

test("a body that is not multipart is a 400", async () => {
  await expect(
    receiveMultipartFiles(Readable.from([Buffer.from("a=b")]), "multipart/form-data", {
      pathFor: () => path.join(dir, "never"),
      maxFiles: 1,
      fileLimit: 1,
      listFiles: 1,
      maxFields: 1,
      fieldLimit: 1,
    }),
  ).rejects.toMatchObject({ code: 400 });
});
